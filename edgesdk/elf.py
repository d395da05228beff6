"""A small ELF reader (struct, no dependencies) for what edgesdk needs of a linked firmware: the header's entry
and machine, the sections (name, type, flags, offset, size), the loadable segments and the symbol table.

The firmware build reads section sizes from it once per build, and the emulator loads segments and looks up
symbols (it caches the parse per file version). pyelftools parses everything lazily through construct and
its import alone costs more than a firmware link, so neither uses it; struct reads the few tables whole.
"""

from __future__ import annotations

import struct
from pathlib import Path
from .dataclass_cache import dataclass

EM_RISCV = 243
PT_LOAD = 1
SHT_SYMTAB = 2
SHF_ALLOC = 0x2
SHN_UNDEF = 0
STT_FUNC = 2


class ElfFormatError(ValueError):
    """The bytes are not an ELF file this reader understands (the caller says what to do about it)."""


@dataclass(frozen=True)
class Section:
    name: str
    type: int  # sh_type (SHT_*)
    flags: int  # sh_flags (SHF_*)
    offset: int  # in the file
    size: int
    link: int  # sh_link: for a symbol table, the index of its string table


@dataclass(frozen=True)
class Segment:
    type: int  # p_type (PT_*)
    offset: int  # in the file
    paddr: int  # physical (load) address
    filesz: int
    memsz: int


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    type: int  # STT_* (the low 4 bits of st_info)
    shndx: int  # SHN_UNDEF (0) for an undefined symbol


class ElfFile:
    """One ELF file's bytes and its header; the tables are read on demand."""

    def __init__(self, data: bytes):
        if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
            raise ElfFormatError("no ELF header")
        self.data = data
        self.wide = data[4] == 2  # ELFCLASS64
        self.order = "<" if data[5] == 1 else ">"
        header = "HHIQQQIHHHHHH" if self.wide else "HHIIIIIHHHHHH"
        (_, self.machine, _, self.entry, self._phoff, self._shoff, _, _, self._phentsize, self._phnum,
         self._shentsize, self._shnum, self._shstrndx) = self._unpack(header, 16)

    @classmethod
    def read(cls, path) -> "ElfFile":
        return cls(Path(path).read_bytes())

    @property
    def bits(self) -> int:
        return 64 if self.wide else 32

    def _unpack(self, fields: str, offset: int) -> tuple:
        try:
            return struct.unpack_from(self.order + fields, self.data, offset)
        except struct.error:
            raise ElfFormatError(f"truncated at offset {offset}") from None

    def _string(self, table_offset: int, index: int) -> str:
        start = table_offset + index
        end = self.data.find(b"\0", start)
        if start >= len(self.data) or end < 0:
            raise ElfFormatError("a name runs past the end of the file")
        return self.data[start:end].decode("utf-8", "replace")

    # -- tables ---------------------------------------------------------------------------------------------
    def sections(self) -> list:
        """Every section, in header order."""
        fields = "IIQQQQII" if self.wide else "IIIIIIII"
        raw = [self._unpack(fields, self._shoff + i * self._shentsize) for i in range(self._shnum)]
        if not raw:
            return []
        if self._shstrndx >= len(raw):
            raise ElfFormatError("the section name table index is out of range")
        names = raw[self._shstrndx][4]
        return [Section(self._string(names, name), kind, flags, offset, size, link)
                for name, kind, flags, _addr, offset, size, link, _info in raw]

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections() if s.name == name), None)

    def section_data(self, section: Section) -> bytes:
        return self.data[section.offset:section.offset + section.size]

    def segments(self) -> list:
        """Every program header, in order."""
        out = []
        for i in range(self._phnum):
            start = self._phoff + i * self._phentsize
            if self.wide:
                kind, _, offset, _, paddr, filesz, memsz = self._unpack("IIQQQQQ", start)
            else:
                kind, offset, _, paddr, filesz, memsz = self._unpack("IIIIII", start)
            out.append(Segment(kind, offset, paddr, filesz, memsz))
        return out

    def loaded_segments(self) -> list:
        """(physical load address, file bytes) of each PT_LOAD segment with contents."""
        return [(s.paddr, self.data[s.offset:s.offset + s.filesz]) for s in self.segments()
                if s.type == PT_LOAD and s.filesz > 0]

    def loaded_bytes(self) -> int:
        """Bytes of file contents in the loadable segments (PT_LOAD p_filesz): the flash image."""
        return sum(s.filesz for s in self.segments() if s.type == PT_LOAD)

    def symbols(self) -> list:
        """The entries of .symtab (none when the file is stripped), in table order, the null entry left out."""
        sections = self.sections()
        table = next((s for s in sections if s.type == SHT_SYMTAB), None)
        if table is None:
            return []
        if table.link >= len(sections):
            raise ElfFormatError("the symbol table's string table index is out of range")
        strings = sections[table.link].offset
        entry = "IBBHQQ" if self.wide else "IIIBBH"
        width = struct.calcsize("=" + entry)
        data = self.data[table.offset:table.offset + table.size - table.size % width]
        out = []
        for fields in struct.iter_unpack(self.order + entry, data):
            if self.wide:
                name, info, _, shndx, value, size = fields
            else:
                name, value, size, info, _, shndx = fields
            if name:
                out.append(Symbol(self._string(strings, name), value, size, info & 0xF, shndx))
        return out
