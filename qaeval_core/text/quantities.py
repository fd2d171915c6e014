"""Numbers as annotators compare them: equality at the written precision, graded closeness, units.

How annotators judge a number (PANDA rule 2, "numerical information"; the MMLU-Pro labels): the
way it is written does not matter ("264g" = "264", "1.6%" = "0.016", "7.97 x 10^3" = "7970",
"2,700" = "2700", ``\\frac{3}{16\\pi}`` = "0.0597"); a rounded value is accepted, and so, most
of the time, is one within about 1% of the reference (another rounding, a slightly different
constant, a unit conversion: "60.68 J" for "45 ft-lb"); one a few percent off is rejected, and a
different year or count is wrong however close. Two readings follow, for the inputs of
:mod:`qaeval_core.metrics.shape` and for the judge's outcomes and traces:

* **exact** (:func:`number_features`): the numbers as :mod:`.numbers` reads them (the one
  reader: integers and decimals with thousands separators, signs, scientific notation,
  percentages also read as fractions, digits glued to units, the number words zero-twenty),
  equal at the precision of the less precise one (:func:`.numbers.numbers_equal`), so a
  rounded answer is accepted but a different year is not; no ranges, no unit conversions.
* **graded** (:func:`quantities`, :func:`closeness`, :func:`number_closeness`): the same
  numbers read after :func:`_prepare` has turned simple LaTeX and Unicode into plain text
  (``\\frac``, ``\\sqrt`` and ``\\pi`` evaluated by a small arithmetic parser, never
  ``eval``; superscript digits as powers), each with the unit written after it; agreement
  falls linearly in log relative error (0.1% -> 1, 1% -> 0.5, 10% -> 0), values in two known
  units of one dimension are compared in SI, and two different small integers never agree.

**Units** come from a built-in table (about 240 spellings of the units answers write: length,
mass, energy, power, pressure, force, time, volume, frequency, electrical units, concentration,
temperature with offsets, angle, money words) rather than pint. A score is stored under the
metric's config hash, which knows nothing of a dependency's version: a pint release that
renamed or redefined a unit would change scores under an unchanged hash, where this table
changes only with the code (and the metric's version). pint also parses unit *expressions*, not
the free text after a number ("45 ft-lb of work", "m^2", "per second"), so the token reading
here would be needed anyway; an unknown unit means no conversion, never a wrong one.

Why it is one module: the exact and the graded comparisons take their numbers from
:mod:`.numbers` (spans, significant digits, percentage readings) and share the written
precision, so number_match and number_closeness never disagree about what the answer says;
the unit table belongs to the graded one alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from qaeval_core.text.numbers import extract_numbers, number_spans, numbers_equal

__all__ = [
    "number_features",
    "quantities",
    "closeness",
    "number_closeness",
]


def number_features(candidate: str, references: Sequence[str]) -> tuple[float, float]:
    """``(match, agree)`` as described in the module docstring, max over references."""
    cand = extract_numbers(candidate or "")
    best_match, best_agree = 0.0, 0.0
    any_ref = False
    for ref in references:
        nums = extract_numbers(str(ref or ""))
        if not nums:
            best_agree = 1.0
            continue
        any_ref = True
        hits = [any(numbers_equal(r, c) for c in cand) for r in nums]
        # A percentage gives two readings of which at most one can match: count one per value.
        distinct = len({round(v, 12) for v, _ in nums}) - sum(
            1 for v, _ in nums if any(abs(v * 100 - w) < 1e-9 * max(1, abs(w)) for w, _ in nums)
        )
        share = min(1.0, sum(hits) / max(1, distinct))
        best_match = max(best_match, share)
        best_agree = max(best_agree, 1.0 if not cand or any(hits) else 0.0)
    if not any_ref:
        best_agree = 1.0
    return best_match, best_agree


# --- graded number agreement -------------------------------------------------------------------
# Annotators accept a value within about 1% of the reference (a different rounding, a slightly
# different constant, a unit conversion: "60.68 J" for "45 ft-lb") and reject one a few percent
# off. number_match is exact at the written precision, so it gives the stacker nothing between
# "equal" and "conflicting"; these inputs grade the distance.

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUPER_RUN = re.compile(r"([⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+)")
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_SQRT = re.compile(r"\\sqrt\s*\{([^{}]*)\}")
_PI = re.compile(r"(?P<coef>\d+(?:\.\d+)?)?\s*(?:\\pi\b|π)")
_LATEX_WRAP = re.compile(
    r"\\(?:mathrm|text|textrm|mathbf|mathit|rm|operatorname|mbox|left|right|displaystyle)\b"
)
_LATEX_SPACE = re.compile(r"\\[,;:! ]|~|\\[()\[\]]")
_EXPR_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?|\.\d+)|(\\pi\b|π)|(\\times|\\cdot|[-+*/^()]))")


def _eval_simple(expr: str) -> float | None:
    """Value of a small arithmetic expression (numbers, pi, + - * / ^, parentheses, implicit
    products such as ``16\\pi``); ``None`` for anything else (a variable, a command)."""
    toks: list[tuple[str, Any]] = []
    pos, expr = 0, expr.strip()
    while pos < len(expr):
        m = _EXPR_TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            return None
        if m.group(1):
            toks.append(("n", float(m.group(1))))
        elif m.group(2):
            toks.append(("n", math.pi))
        else:
            op = m.group(3)
            toks.append(("o", "*" if op in ("\\times", "\\cdot") else op))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    if not toks or len(toks) > 40:
        return None
    i = 0

    def peek() -> tuple[str, Any] | None:
        return toks[i] if i < len(toks) else None

    def atom() -> float:
        nonlocal i
        t = peek()
        if t is None:
            raise ValueError
        if t == ("o", "("):
            i += 1
            v = add()
            if peek() != ("o", ")"):
                raise ValueError
            i += 1
            return v
        if t == ("o", "-"):
            i += 1
            return -power()
        if t[0] != "n":
            raise ValueError
        i += 1
        return float(t[1])

    def power() -> float:
        nonlocal i
        base = atom()
        if peek() == ("o", "^"):
            i += 1
            exp = power()
            if abs(exp) > 30:
                raise ValueError
            return base**exp
        return base

    def mul() -> float:
        nonlocal i
        v = power()
        while True:
            t = peek()
            if t in (("o", "*"), ("o", "/")):
                i += 1
                r = power()
                v = v * r if t[1] == "*" else v / r
            elif t is not None and (t[0] == "n" or t == ("o", "(")):
                v *= power()  # implicit product: 16\pi, 2(3)
            else:
                return v

    def add() -> float:
        nonlocal i
        v = mul()
        while peek() in (("o", "+"), ("o", "-")):
            op = toks[i][1]
            i += 1
            r = mul()
            v = v + r if op == "+" else v - r
        return v

    try:
        value = add()
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None
    if i != len(toks) or isinstance(value, complex) or not math.isfinite(value):
        return None
    return float(value)


def _fmt(value: float) -> str:
    return f" {value:.6g} "


@lru_cache(maxsize=100_000)
def _prepare(text: str) -> str:
    """Plain-text reading of the LaTeX and Unicode that answers write numbers with: simple
    ``\\frac``, ``\\sqrt`` and ``\\pi`` evaluated, superscript digits read as ``^``, wrappers
    (``\\text``, ``\\mathrm``) and braces dropped, ``^\\circ`` read as a degree sign."""
    t = _SUPER_RUN.sub(lambda m: "^" + m.group(1).translate(_SUPERSCRIPTS), text)
    for _ in range(4):  # innermost first: \frac{\sqrt{2}}{2}
        new = _SQRT.sub(
            lambda m: (
                _fmt(math.sqrt(v))
                if (v := _eval_simple(m.group(1))) is not None and v >= 0
                else m.group(0)
            ),
            t,
        )
        new = _FRAC.sub(
            lambda m: (
                _fmt(v)
                if (v := _eval_simple(f"({m.group(1)})/({m.group(2)})")) is not None
                else m.group(0)
            ),
            new,
        )
        if new == t:
            break
        t = new
    t = _PI.sub(lambda m: _fmt(float(m.group("coef") or 1) * math.pi), t)
    t = re.sub(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree", "°", t)
    t = _LATEX_WRAP.sub(" ", t)
    t = _LATEX_SPACE.sub(" ", t)
    return t.replace("{", "").replace("}", "").replace("\\%", "%")


# Unit -> (dimension, factor to the SI unit, offset). Exact spelling first (case matters: mW/MW,
# m/M), then the lower-cased spelling for names of three letters or more.
_U: dict[str, tuple[str, float, float]] = {}


def _units(dim: str, factor: float, *names: str, offset: float = 0.0) -> None:
    for n in names:
        _U[n] = (dim, factor, offset)


_units("length", 1.0, "m", "meter", "meters", "metre", "metres")
_units("length", 1e3, "km", "kilometer", "kilometers")
_units("length", 1e-2, "cm", "centimeter", "centimeters")
_units("length", 1e-3, "mm", "millimeter", "millimeters")
_units("length", 1e-6, "µm", "μm", "um", "micron", "microns", "micrometer", "micrometers")
_units("length", 1e-9, "nm", "nanometer", "nanometers")
_units("length", 1e-10, "Å", "angstrom", "angstroms")
_units("length", 0.3048, "ft", "feet", "foot")
_units("length", 0.0254, "in", "inch", "inches")
_units("length", 0.9144, "yd", "yard", "yards")
_units("length", 1609.344, "mi", "mile", "miles")
_units("mass", 1.0, "kg", "kilogram", "kilograms")
_units("mass", 1e-3, "g", "gm", "gms", "gram", "grams")
_units("mass", 1e-6, "mg", "milligram", "milligrams")
_units("mass", 1e-9, "µg", "μg", "microgram", "micrograms")
_units("mass", 0.45359237, "lb", "lbs", "lbm", "pound", "pounds")
_units("mass", 0.028349523, "oz", "ounce", "ounces")
_units("mass", 907.18474, "ton", "tons")
_units("mass", 1000.0, "tonne", "tonnes")
_units("energy", 1.0, "J", "joule", "joules")
_units("energy", 1e3, "kJ", "kilojoule", "kilojoules")
_units("energy", 1e6, "MJ")
_units("energy", 4.184, "cal", "calorie", "calories")
_units("energy", 4184.0, "kcal", "Cal")
_units("energy", 1055.056, "Btu", "BTU", "btu")
_units("energy", 1.3558179, "ft-lb", "ft-lbf", "ft·lb", "ft.lb", "ftlb", "ft-lbs")
_units("energy", 1.602176634e-19, "eV")
_units("energy", 1.602176634e-16, "keV")
_units("energy", 1.602176634e-13, "MeV")
_units("energy", 1e-7, "erg", "ergs")
_units("energy", 3.6e6, "kWh", "kW-hr", "kwh")
_units("power", 1.0, "W", "watt", "watts")
_units("power", 1e3, "kW", "kilowatt", "kilowatts")
_units("power", 1e6, "MW", "megawatt", "megawatts")
_units("power", 1e-3, "mW", "milliwatt", "milliwatts")
_units("power", 745.69987, "hp", "horsepower")
_units("pressure", 1.0, "Pa", "pascal", "pascals")
_units("pressure", 1e3, "kPa")
_units("pressure", 1e6, "MPa")
_units("pressure", 101325.0, "atm", "atmosphere", "atmospheres")
_units("pressure", 1e5, "bar", "bars")
_units("pressure", 6894.7573, "psi", "psia", "psig")
_units("pressure", 133.32237, "torr", "Torr", "mmHg")
_units("force", 1.0, "N", "newton", "newtons")
_units("force", 1e3, "kN")
_units("force", 4.4482216, "lbf")
_units("force", 1e-5, "dyne", "dynes", "dyn")
_units("time", 1.0, "s", "sec", "secs", "second", "seconds")
_units("time", 1e-3, "ms", "millisecond", "milliseconds")
_units("time", 1e-6, "µs", "μs", "microsecond", "microseconds")
_units("time", 60.0, "min", "mins", "minute", "minutes")
_units("time", 3600.0, "h", "hr", "hrs", "hour", "hours")
_units("time", 86400.0, "day", "days")
_units("time", 31557600.0, "yr", "yrs", "year", "years")
_units("volume", 1e-3, "L", "l", "liter", "liters", "litre", "litres")
_units("volume", 1e-6, "mL", "ml", "milliliter", "milliliters", "cc")
_units("volume", 3.785411784e-3, "gal", "gallon", "gallons")
_units("frequency", 1.0, "Hz", "hertz")
_units("frequency", 1e3, "kHz")
_units("frequency", 1e6, "MHz")
_units("frequency", 1e9, "GHz")
_units("voltage", 1.0, "V", "volt", "volts")
_units("voltage", 1e3, "kV", "kilovolt", "kilovolts")
_units("voltage", 1e-3, "mV", "millivolt", "millivolts")
_units("resistance", 1.0, "Ω", "ohm", "ohms")
_units("resistance", 1e3, "kΩ", "kohm", "kohms", "kilohm", "kilohms")
_units("resistance", 1e6, "MΩ", "megohm", "megohms")
_units("inductance", 1.0, "H", "henry", "henries", "henrys")
_units("inductance", 1e-3, "mH", "millihenry")
_units("capacitance", 1.0, "F", "farad", "farads")
_units("capacitance", 1e-6, "µF", "μF", "uF", "microfarad", "microfarads")
_units("capacitance", 1e-12, "pF", "picofarad", "picofarads")
_units("concentration", 1.0, "M", "molar")
_units("concentration", 1e-3, "mM", "millimolar")
_units("temperature", 1.0, "K", "kelvin", "kelvins")
_units("temperature", 1.0, "°C", "℃", "celsius", offset=273.15)
_units("temperature", 5 / 9, "°F", "℉", "fahrenheit", offset=255.3722222)
_units("angle", 1.0, "°", "deg", "degree", "degrees")
_units("angle", 57.29577951, "rad", "radian", "radians")
_units("money", 1.0, "dollar", "dollars", "$")
_units("money", 1e3, "thousand")
_units("money", 1e6, "million", "millions")
_units("money", 1e9, "billion", "billions")
_UNIT_TOKEN = re.compile(r"\s*(°\s*[CF]\b|[℃℉°Ω]|[A-Za-zµμÅ]+(?:[-·.][A-Za-z]+)?(?:\s*Ω)?)")
_UNIT_PER = re.compile(r"\s*(?:/|\bper\b)\s*")
_UNIT_POWER = re.compile(r"\s*\^\s*([-−]?\d)(?!\d)")


def _lookup(name: str) -> tuple[str, float, float] | None:
    name = name.replace(" ", "")
    if name in _U:
        return _U[name]
    low = name.lower()
    return _U.get(low) if len(low) >= 3 else None


def _unit_at(text: str, pos: int) -> tuple[tuple[str, float, float] | None, int]:
    """One unit token at ``pos`` with an optional integer power (``m^2``, ``s^-1``)."""
    m = _UNIT_TOKEN.match(text, pos)
    if not m:
        return None, pos
    unit = _lookup(m.group(1))
    p = _UNIT_POWER.match(text, m.end())
    if unit is None or not p:
        return unit, m.end()
    power = int(p.group(1).replace("−", "-"))
    if unit[2] or power == 0:
        return None, p.end()
    return (f"{unit[0]}^{power}", unit[1] ** power, 0.0), p.end()


def _unit_after(text: str, end: int) -> tuple[str, float, float] | None:
    """The unit written right after a number (``"45 ft-lb"``, ``"2.49 km/s"``), as
    ``(dimension, factor to SI, offset)``; ``None`` when there is none or it is not known."""
    first, pos = _unit_at(text, end)
    if first is None:
        return None
    per = _UNIT_PER.match(text, pos)
    if per:
        second, _ = _unit_at(text, per.end())
        if second is None or second[2]:
            return None  # a compound unit we cannot read: no conversion
        return (f"{first[0]}/{second[0]}", first[1] / second[1], 0.0)
    return first


@dataclass(frozen=True)
class _Quantity:
    """One number of an answer: its readings (a percentage has two), the written precision,
    whether it is a plain integer, and its unit when one is known."""

    values: tuple[float, ...]
    sig: int
    integer: bool
    unit: tuple[str, float, float] | None


@lru_cache(maxsize=100_000)
def quantities(text: str) -> tuple[_Quantity, ...]:
    """The numbers of an answer for graded comparison, read from :func:`_prepare`'s text.

    Exponents of units (the 2 of ``m^2``, ``s^{-1}``) and subscripts are not numbers here.
    """
    t = _prepare(text or "")
    by_span: dict[tuple[int, int], list[tuple[float, int, bool]]] = {}
    for v, sig, a, b, integer in number_spans(t):
        before = t[:a].rstrip()
        if before.endswith(("^", "_")) and not before[:-1].rstrip().endswith("10"):
            continue
        by_span.setdefault((a, b), []).append((v, sig, integer))
    out = []
    for (_a, b), readings in sorted(by_span.items()):
        unit = _unit_after(t, b)
        out.append(
            _Quantity(
                tuple(r[0] for r in readings),
                readings[0][1],
                readings[0][2] and len(readings) == 1,
                unit,
            )
        )
    return tuple(out)


def closeness(a: float, b: float, *, sig: int = 15, exact_integers: bool = False) -> float:
    """Agreement of two values in [0, 1] from their relative error ``e``:
    ``clip((-log10 e - 1) / 2, 0, 1)``: 1 at e <= 0.1%, 0.5 at 1%, 0 from 10% on.

    Linear in log error, so the stacker's logistic fits the steepness and the midpoint; equal
    at the written precision (``sig``: the less precise number's digits) counts as 1, values of
    opposite sign as 0, and with ``exact_integers`` two different integers (years, counts)
    score 0.
    """
    if a == b:
        return 1.0
    if a == 0 or b == 0 or (a > 0) != (b > 0):
        return 0.0
    if exact_integers:
        return 0.0
    if numbers_equal((a, sig), (b, sig)):
        return 1.0
    e = abs(a - b) / max(abs(a), abs(b))
    return float(min(1.0, max(0.0, (-math.log10(e) - 1.0) / 2.0)))


def _pair(r: _Quantity, c: _Quantity, scaled: bool) -> float:
    sig = min(r.sig, c.sig)
    exact = r.integer and c.integer and max(abs(r.values[0]), abs(c.values[0])) < 10_000
    best = 0.0
    for rv in r.values:
        for cv in c.values:
            best = max(best, closeness(rv, cv, sig=sig, exact_integers=exact))
            if best == 1.0:
                return best
    if r.unit and c.unit and r.unit[0] == c.unit[0] and r.unit[1:] != c.unit[1:]:
        # same dimension, different units: compare in SI (offsets for temperatures)
        for rv in r.values:
            for cv in c.values:
                rs, cs = rv * r.unit[1] + r.unit[2], cv * c.unit[1] + c.unit[2]
                best = max(best, closeness(rs, cs, sig=sig))
    if scaled and not exact:
        # a unit left unsaid or a different SI prefix: "24.5" (Pa) for "0.0245 kPa"
        for rv in r.values:
            for cv in c.values:
                for k in (-9, -6, -3, 3, 6, 9):
                    best = max(best, closeness(rv, cv * 10.0**k, sig=sig))
    return best


def number_closeness(candidate: str, references: Sequence[str], *, scaled: bool = False) -> float:
    """Mean over a reference's numbers of the best :func:`closeness` to a candidate number
    (converted between known units of one dimension; with ``scaled`` also up to a factor
    ``10^(3k)``), max over references; 0 when no reference has a number or the candidate none."""
    cand = quantities(candidate or "")
    if not cand:
        return 0.0
    best = 0.0
    for ref in references:
        nums = quantities(str(ref or ""))
        if not nums:
            continue
        share = sum(max(_pair(r, c, scaled) for c in cand) for r in nums) / len(nums)
        best = max(best, share)
    return best
