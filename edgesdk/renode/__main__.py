"""python3 -m edgesdk.renode library DIR [BOARD] | check [BOARD] | scaffold BOARD | compile DIR

library DIR [BOARD]  build the native model of every C# peripheral in the board's .repl (default riscv-npu)
                     into DIR (the lib<name>.so each P/Invokes); put DIR on LD_LIBRARY_PATH for Renode
check [BOARD]        compare the board's .repl with its board.json (default riscv-npu); exit 1 on differences
scaffold BOARD       print a starting .repl for a board.json that has none
compile DIR          compile the C# peripherals against the Renode stand-ins (mcs) into DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..board import load_board
from ..errors import EdgesdkError, UsageError
from . import compile_peripherals, native_libraries
from .build_platform import check_libraries, csharp_sources, target_peripherals
from .platform import check_against_board, repl_path, resc_path, scaffold_repl
from .repl import format_repl, read_repl


def board_libraries(out_dir, board_name: str) -> list:
    """The native libraries of the peripherals the board's whole Renode platform (its .resc) creates."""
    board = load_board(board_name)
    path = repl_path(board)
    if not path.is_file() or not resc_path(board).is_file():
        raise UsageError(f"Board {board.name} has no Renode platform ({path.name} and {resc_path(board).name} beside "
                         f"{board.path}).")
    types = {e.type for e in read_repl(path).entries.values() if e.type}
    libraries = native_libraries(out_dir, sorted(types))
    check_libraries(csharp_sources(resc_path(board), types, target_peripherals()), Path(out_dir))
    return libraries


def main(argv: list) -> int:
    if not argv or argv[0] not in ("library", "check", "scaffold", "compile"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    try:
        if command == "library" and len(args) in (1, 2):
            for library in board_libraries(args[0], args[1] if len(args) == 2 else "riscv-npu"):
                print(library)
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
