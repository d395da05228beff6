"""Seeded mutations of .tflite models: structure-aware (hostile field values) and byte-level.

`Mutator(seeds, rng).mutant()` returns `(bytes, description)`. A mutant stacks 1-4 mutations on one seed:
structure-aware ones write a hostile value into a field found by `flatbuf.model_sites` (oversized or zero
dimensions, out-of-range buffer / tensor / opcode indices, negative or zero strides and filter sizes, zero,
negative, NaN, infinite or denormal scales, absurd zero points and quantized dimensions, wrong builtin
codes, hostile names, random weights, corrupt vector lengths); byte-level ones flip bits, overwrite bytes or
32-bit words, truncate, cut or duplicate chunks, or splice two models. Everything is drawn from the given
`random.Random`, so a seed reproduces a run exactly.
"""

from __future__ import annotations

import math
import random
import struct

from .flatbuf import FMT_WIDTH, Site, model_sites

INT32_EXTREMES = [0, 1, -1, 2, 3, 7, 64, 65, 255, 256, 4096, 65535, 65536, 1 << 24, 1 << 28, (1 << 31) - 1, -(1 << 31),
                  -2, -128, 127, -129, 128]
FLOAT_EXTREMES = [0.0, -0.0, -1.0, float("nan"), float("inf"), float("-inf"), 1e-45, 1.17e-38, 1e-30, 1e-10,
                  1e10, 1e30, 3.4e38, 2.0 ** -40, 2.0 ** 40, 1.0]
INT64_EXTREMES = [0, 127, 128, -128, -129, 255, 256, -(1 << 63), (1 << 63) - 1, 1 << 40, -(1 << 31)]
# Names that try to escape the C comment / string / identifier they end up in (and the terminal).
HOSTILE_NAMES = [b'*/ int injected_by_fuzz = 1; /*', b'"; int injected_by_fuzz = 1; //', b'??/', b'\\',
                 b'*\\ int injected_by_fuzz = 1; /*', b'\n#error injected_by_fuzz\n', b'\x1b[2J\x1b[31m', b'\xff\xfe\x00',
                 b'int', b'INT8_MAX', b'edgesdk_arena', b'0x', b'/*/', b'**//', b'%s%n', b'\r\n*/']
# Builtin codes of the ops edgesdk knows (tflite.BuiltinOperator), to turn one op into another.
KNOWN_CODES = [0, 1, 2, 3, 4, 5, 6, 9, 14, 17, 18, 19, 21, 22, 25, 34, 40, 114, 117]


class Mutator:
    """Mutants of the seed models (name -> bytes)."""

    def __init__(self, seeds: dict, rng: random.Random):
        self.rng = rng
        self.seeds = dict(seeds)
        self.names = sorted(self.seeds)
        self._sites: dict = {}
        # Chunk duplication must not compound over generations of corpus entries.
        self.max_bytes = 2 * max(len(d) for d in self.seeds.values())

    def sites(self, name: str) -> dict:
        """kind -> [Site] of a seed (walked once)."""
        if name not in self._sites:
            try:
                found = model_sites(self.seeds[name])
            except Exception:  # noqa: BLE001 - an added corpus entry may not be walkable: bytes only
                found = []
            by_kind: dict = {}
            for site in found:
                by_kind.setdefault(site.kind, []).append(site)
            self._sites[name] = by_kind
        return self._sites[name]

    def add_seed(self, name: str, data: bytes) -> None:
        self.seeds[name] = data
        self.names.append(name)

    def mutant(self) -> tuple:
        rng = self.rng
        name = rng.choice(self.names)
        data = bytearray(self.seeds[name])
        steps = []
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4])):
            if rng.random() < 0.75:
                steps.append(self._structured(name, data))
            else:
                steps.append(self._bytes_in_place(data))
        if rng.random() < 0.12:
            data, step = self._resize(bytes(data))
            steps.append(step)
        return bytes(data[:self.max_bytes]), f"{name}: " + "; ".join(s for s in steps if s)

    # -- structure-aware ----------------------------------------------------------------------------------
    def _structured(self, name: str, data: bytearray) -> str:
        rng = self.rng
        by_kind = self.sites(name)
        if not by_kind:
            return self._bytes_in_place(data)
        kind = rng.choice(sorted(by_kind))
        site = rng.choice(by_kind[kind])
        if site.fmt == "raw":
            return self._raw(site, data)
        value = self._value_for(site, data)
        try:
            struct.pack_into(site.fmt, data, site.pos, value)
        except (struct.error, OverflowError):  # out of the field's range: wrap it (or make it an infinity)
            value = _wrap(value, site.fmt)
            struct.pack_into(site.fmt, data, site.pos, value)
        return f"{site.kind}@{site.pos}={value!r}"

    def _value_for(self, site: Site, data: bytearray):
        rng = self.rng
        old = site.read(data)
        if site.fmt == "<f":
            choice = rng.random()
            if choice < 0.7:
                return rng.choice(FLOAT_EXTREMES)
            return float(old) * 2.0 ** rng.randint(-60, 60) if math.isfinite(old) else 1.0
        if site.fmt in ("<q", "<Q"):
            return rng.choice(INT64_EXTREMES + [old + rng.randint(-300, 300)])
        if site.context and rng.random() < 0.5:  # indices: near the valid range
            return rng.choice([-1, -2, site.context, site.context + 1, rng.randrange(site.context),
                               (1 << 31) - 1])
        if site.kind == "opcode.builtin_code" and rng.random() < 0.6:
            return rng.choice(KNOWN_CODES)
        if site.kind == "tensor.type":
            return rng.randint(-2, 20)
        if site.kind == "tensor.shape" and rng.random() < 0.5:
            return rng.choice([0, -1, old + 1, old - 1, old * 2, old * 1000, 1 << 16, 1 << 20])
        if rng.random() < 0.15:
            return old ^ (1 << rng.randrange(FMT_WIDTH[site.fmt] * 8))
        return rng.choice(INT32_EXTREMES)

    def _raw(self, site: Site, data: bytearray) -> str:
        rng = self.rng
        if site.kind.endswith("name") or site.kind in ("model.description", "opcode.custom_code"):
            payload = rng.choice(HOSTILE_NAMES)
            payload = (payload * (site.length // len(payload) + 1))[:site.length]
            data[site.pos:site.pos + site.length] = payload
            return f"{site.kind}@{site.pos}={payload[:16]!r}"
        # buffer contents (weights, biases, constant shapes/axes): a random stretch of random or extreme bytes
        start = site.pos + rng.randrange(site.length)
        count = min(rng.choice([1, 4, 8, 64, 4096]), site.pos + site.length - start)
        if rng.random() < 0.5:
            chunk = bytes(rng.randrange(256) for _ in range(count))
        else:
            word = struct.pack("<i", rng.choice(INT32_EXTREMES))
            chunk = (word * (count // 4 + 1))[:count]
        data[start:start + count] = chunk
        return f"{site.kind}@{start}+{count}"

    # -- byte level -----------------------------------------------------------------------------------------
    def _bytes_in_place(self, data: bytearray) -> str:
        rng = self.rng
        if not data:
            return ""
        choice = rng.random()
        if choice < 0.4:
            flips = rng.randint(1, 8)
            for _ in range(flips):
                pos = rng.randrange(len(data))
                data[pos] ^= 1 << rng.randrange(8)
            return f"{flips} bit flips"
        if choice < 0.7:
            pos = rng.randrange(len(data))
            data[pos] = rng.randrange(256)
            return f"byte@{pos}"
        if len(data) >= 4:
            pos = rng.randrange(len(data) - 3) & ~3
            value = rng.choice(INT32_EXTREMES)
            struct.pack_into("<i", data, pos, value)
            return f"word@{pos}={value}"
        return ""

    def _resize(self, data: bytes) -> tuple:
        rng = self.rng
        choice = rng.random()
        if choice < 0.4 or len(data) < 16:
            cut = rng.randrange(len(data) + 1)
            return data[:cut], f"truncated to {cut}"
        a, b = sorted(rng.randrange(len(data)) for _ in range(2))
        if choice < 0.65:
            return data[:a] + data[b:], f"cut {a}..{b}"
        if choice < 0.85:
            return data[:b] + data[a:b] + data[b:], f"duplicated {a}..{b}"
        other = self.seeds[rng.choice(self.names)]
        pos = rng.randrange(len(other) + 1)
        return data[:a] + other[pos:], f"spliced at {a}"


def _wrap(value, fmt: str):
    """Fit an integer into the field's width (two's complement), or a float into float32 range."""
    if fmt == "<f":
        value = float(value)
        return value if not math.isfinite(value) or abs(value) <= 3.4028234e38 else math.copysign(math.inf, value)
    bits = FMT_WIDTH[fmt] * 8
    value = int(value) & ((1 << bits) - 1)
    signed = fmt[1].islower()
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value
