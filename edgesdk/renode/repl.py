"""Reader and writer for Renode platform descriptions (.repl), the subset edgesdk uses.

A .repl lists peripherals, one entry each:

    name: Type.Name @ sysbus 0x10000000        (or <base, +size>, or no address for a CPU)
        constructorParameter: 0x400000
        PropertyName: 200
        IRQ -> plic@8                           (GPIO connections; '[0, 1] -> cpu@[3, 7]' too)

Values are integers (decimal or hex), "strings", true/false, enum literals (Type.Member), references to
other entries (bare names) and ranges <base, +size>. Comments are // and /* */. Inline attribute blocks
(`@ sysbus 0x0 { size: 0x100; a: 1 }`) are read as well. Renode features outside this subset (init
sections, multi-registrations, `using` of other files) are reported as errors naming the line, so a
file the built-in emulator reads is never silently misread.

`parse_repl()`/`read_repl()` return a `Repl` of `ReplEntry`s; `format_repl()` writes one back (round trip:
`parse_repl(format_repl(x)) == x`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..dataclass_cache import dataclass, field
from ..errors import UsageError


@dataclass(frozen=True)
class Enum:
    """An enum literal such as PrivilegedArchitecture.Priv1_11."""

    name: str


@dataclass(frozen=True)
class Reference:
    """A reference to another entry of the platform (e.g. `timeProvider: clint`)."""

    name: str


@dataclass(frozen=True)
class Range:
    """<base, +size>."""

    base: int
    size: int


@dataclass(frozen=True)
class Connection:
    """`source -> target@inputs`: GPIO output(s) of this entry wired to input(s) of `target`.

    `source` is a property name ('IRQ'), a tuple of output numbers, or None for the default output.
    """

    source: object
    target: str
    inputs: tuple


@dataclass
class ReplEntry:
    name: str
    type: str | None = None  # None: an update of an entry defined elsewhere
    bus: str | None = None  # 'sysbus' for bus peripherals
    address: int | None = None
    size: int | None = None  # from a <base, +size> registration
    attributes: dict = field(default_factory=dict)  # name -> int | str | bool | Enum | Reference | Range
    connections: list = field(default_factory=list)
    line: int = field(default=0, compare=False)  # where the entry starts (1-based), for messages

    @property
    def end(self) -> int | None:
        return None if self.address is None or self.size is None else self.address + self.size

    def irq_inputs(self, target: str, source: str = "IRQ") -> list:
        """Input numbers of `target` that this entry's `source` GPIO is connected to."""
        return [n for c in self.connections if c.target == target and c.source in (source, None) for n in c.inputs]


@dataclass
class Repl:
    entries: dict  # name -> ReplEntry, in file order
    path: Path | None = None
    header: str = ""  # leading comment block, kept by format_repl

    def __getitem__(self, name: str) -> ReplEntry:
        return self.entries[name]

    def of_type(self, type_name: str) -> list:
        return [e for e in self.entries.values() if e.type == type_name]


class ReplSyntaxError(UsageError):
    """A .repl line outside the supported subset, or malformed."""


# ---- Reading ----------------------------------------------------------------------------------------

_ENTRY = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)\s*:\s*(?P<rest>.*)$")
_ATTRIBUTE = re.compile(r"^(?P<key>[A-Za-z_]\w*)\s*:\s*(?P<value>.+)$")
_CONNECTION = re.compile(r"^(?P<source>.*?)\s*->\s*(?P<target>[A-Za-z_]\w*)\s*@\s*(?P<inputs>.+)$")
_INT = re.compile(r"^-?(0[xX][0-9a-fA-F_]+|\d+)$")


def read_repl(path) -> Repl:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"Cannot read the Renode platform description {path}: {exc.strerror}.") from None
    return parse_repl(text, path)


def parse_repl(text: str, path=None) -> Repl:
    where = str(path) if path else "<repl>"
    lines = _strip_comments(text).split("\n")
    header = _leading_comment(text)
    entries = {}
    current = None
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if line[0] not in " \t":
            current = _parse_entry_line(line.strip(), number, where)
            if current.name in entries:
                raise ReplSyntaxError(f"{where}:{number}: entry '{current.name}' is defined twice.")
            entries[current.name] = current
        elif current is None:
            raise ReplSyntaxError(f"{where}:{number}: indented line outside any entry: {line.strip()!r}.")
        else:
            _parse_body_line(current, line.strip(), number, where)
    return Repl(entries, Path(path) if path else None, header)


def _strip_comments(text: str) -> str:
    """Remove // and /* */ comments (outside strings), keeping line numbers."""
    out, i, in_string = [], 0, False
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == '"':
                in_string = False
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            block = text[i:len(text) if end < 0 else end + 2]
            out.append("\n" * block.count("\n"))
            i += len(block)
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _leading_comment(text: str) -> str:
    header = []
    for line in text.splitlines():
        if line.startswith("//"):
            header.append(line)
        else:
            break
    return "\n".join(header)


def _parse_entry_line(line: str, number: int, where: str) -> ReplEntry:
    match = _ENTRY.match(line)
    if not match:
        raise ReplSyntaxError(f"{where}:{number}: expected 'name: Type @ sysbus address', got {line!r}.")
    entry = ReplEntry(match["name"], line=number)
    type_part, _, registration = match["rest"].partition("@")
    registration, inline = registration.strip(), ""
    if registration.startswith("{"):
        raise ReplSyntaxError(f"{where}:{number}: registration point {registration!r} of '{entry.name}' is not an "
                              "address or <base, +size> range (other registration forms are not supported).")
    if "{" in type_part + registration:
        text = type_part + registration
        if not text.rstrip().endswith("}"):
            raise ReplSyntaxError(f"{where}:{number}: an inline attribute block must end on the same line.")
        inline = text[text.index("{") + 1:text.rstrip().rindex("}")]
        if "{" in type_part:
            type_part = type_part[:type_part.index("{")]
        else:
            registration = registration[:registration.index("{")].strip()
    entry.type = type_part.strip() or None
    if registration:
        _parse_registration(entry, registration, number, where)
    for item in filter(None, (part.strip() for part in inline.split(";"))):
        _parse_body_line(entry, item, number, where)
    return entry


def _parse_registration(entry: ReplEntry, text: str, number: int, where: str) -> None:
    parts = text.split(None, 1)
    entry.bus = parts[0]
    if len(parts) == 1:
        return
    point = parts[1].strip()
    if point.startswith("<"):
        value = _parse_value(point, number, where)
        entry.address, entry.size = value.base, value.size
    elif _INT.match(point):
        entry.address = _int(point)
    else:
        raise ReplSyntaxError(f"{where}:{number}: registration point {point!r} of '{entry.name}' is not an address "
                              "or <base, +size> range (other registration forms are not supported).")


def _parse_body_line(entry: ReplEntry, line: str, number: int, where: str) -> None:
    connection = _CONNECTION.match(line)
    if connection:
        source = connection["source"].strip()
        entry.connections.append(Connection(_parse_gpio_source(source), connection["target"],
                                            _parse_numbers(connection["inputs"], number, where)))
        return
    if re.match(r"init\s*:", line):
        raise ReplSyntaxError(f"{where}:{number}: 'init' sections are not supported by edgesdk's .repl reader.")
    attribute = _ATTRIBUTE.match(line)
    if not attribute:
        raise ReplSyntaxError(f"{where}:{number}: cannot read {line!r} in entry '{entry.name}' (expected "
                              "'name: value' or 'source -> target@input').")
    entry.attributes[attribute["key"]] = _parse_value(attribute["value"].strip(), number, where)


def _parse_gpio_source(text: str):
    if not text:
        return None
    if text[0] == "[" or _INT.match(text):
        return _parse_numbers(text, 0, "")
    return text


def _parse_numbers(text: str, number: int, where: str) -> tuple:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        items = [t.strip() for t in text[1:-1].split(",") if t.strip()]
    else:
        items = [text]
    result = []
    for item in items:
        if "-" in item.lstrip("-") and not _INT.match(item):
            low, high = (_int(t.strip()) for t in item.split("-"))
            result.extend(range(low, high + 1))
        elif _INT.match(item):
            result.append(_int(item))
        else:
            raise ReplSyntaxError(f"{where}:{number}: expected a GPIO number or [list], got {text!r}.")
    return tuple(result)


def _int(text: str) -> int:
    return int(text.replace("_", ""), 0)


def _parse_value(text: str, number: int, where: str):
    if _INT.match(text):
        return _int(text)
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        return text[1:-1]
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.startswith("<") and text.endswith(">"):
        base, _, size = (t.strip() for t in text[1:-1].partition(","))
        if not (_INT.match(base) and size.startswith("+") and _INT.match(size[1:].strip())):
            raise ReplSyntaxError(f"{where}:{number}: only <base, +size> ranges are supported, got {text!r}.")
        return Range(_int(base), _int(size[1:].strip()))
    if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", text):
        return Enum(text)
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        return Reference(text)
    raise ReplSyntaxError(f"{where}:{number}: cannot read the value {text!r}.")


# ---- Writing ----------------------------------------------------------------------------------------

def format_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # Addresses and sizes (multiples of 4 KiB) in hex, other numbers (clocks, counts) in decimal.
        return f"{value:#x}" if value >= 0x10000 and value % 0x1000 == 0 else str(value)
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Range):
        return f"<{value.base:#010x}, +{value.size:#x}>"
    if isinstance(value, (Enum, Reference)):
        return value.name
    raise TypeError(f"cannot write {value!r} in a .repl")


def _format_numbers(numbers: tuple) -> str:
    return str(numbers[0]) if len(numbers) == 1 else "[" + ", ".join(map(str, numbers)) + "]"


def format_entry(entry: ReplEntry) -> str:
    head = f"{entry.name}:"
    if entry.type:
        head += f" {entry.type}"
    if entry.bus:
        head += f" @ {entry.bus}"
        if entry.address is not None and entry.size is not None:
            head += f" {format_value(Range(entry.address, entry.size))}"
        elif entry.address is not None:
            head += f" {entry.address:#010x}"
    lines = [head]
    lines += [f"    {key}: {format_value(value)}" for key, value in entry.attributes.items()]
    for c in entry.connections:
        if c.source is None:
            source = ""
        elif isinstance(c.source, tuple):
            source = _format_numbers(c.source) + " "
        else:
            source = f"{c.source} "
        lines.append(f"    {source}-> {c.target}@{_format_numbers(c.inputs)}")
    return "\n".join(lines)


def format_repl(repl: Repl) -> str:
    parts = [repl.header] if repl.header else []
    parts += [format_entry(e) for e in repl.entries.values()]
    return "\n\n".join(parts) + "\n"
