"""python3 -m edgesdk.renode library DIR | check [BOARD] | scaffold BOARD | compile DIR

library DIR     build the C NPU model as DIR/libedgesdk_npu.so (put DIR on LD_LIBRARY_PATH for Renode)
check [BOARD]   compare the board's .repl with its board.json (default riscv-npu); exit 1 on differences
scaffold BOARD  print a starting .repl for a board.json that has none
compile DIR     compile the C# peripherals against the Renode stand-ins (mcs) into DIR
"""

from __future__ import annotations

import sys

from ..board import load_board
from ..errors import EdgesdkError
from . import compile_peripherals, npu_library
from .platform import check_against_board, repl_path, scaffold_repl
from .repl import format_repl, read_repl


def main(argv: list) -> int:
    if not argv or argv[0] not in ("library", "check", "scaffold", "compile"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    try:
        if command == "library" and len(args) == 1:
            print(npu_library(args[0]))
        elif command == "compile" and len(args) == 1:
            print(compile_peripherals(args[0]))
        elif command == "scaffold" and len(args) == 1:
            print(format_repl(scaffold_repl(load_board(args[0]))), end="")
        elif command == "check" and len(args) <= 1:
            board = load_board(args[0] if args else "riscv-npu")
            problems = check_against_board(read_repl(repl_path(board)), board)
            for problem in problems:
                print(f"{repl_path(board)}: {problem}")
            if problems:
                return 1
            print(f"{repl_path(board)} agrees with {board.path}")
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    except EdgesdkError as err:
        print(f"edgesdk.renode: error: {err}", file=sys.stderr)
        return err.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
