"""Firmware build: board files (board.h, link.ld) from board.json, then CMake + the cross toolchain."""

from .board_files import render_board_files
from .build import build_firmware, check_toolchain, flash_bytes, section_sizes

__all__ = ["build_firmware", "check_toolchain", "flash_bytes", "render_board_files", "section_sizes"]
