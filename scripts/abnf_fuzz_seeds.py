#!/usr/bin/env python3
"""Writes the inputs of the OASIS ABNF test cases of the query-option and expression rules into
Fuzz/Corpus/FuzzFilter/ as libFuzzer seeds, one file per case (`abnf-<rule>-<index>`, the index being
the case's position in the YAML file, so names are deterministic).

The YAML subset parsed here is the one Tests/ODataQueryTests/ABNFTestCases.swift parses (a
`TestCases:` sequence of mappings; plain, single-quoted and double-quoted scalars with folding),
ported line for line. Expression inputs are percent-decoded as ABNFConformanceTests does (the raw
FuzzFilter mode hands text straight to FilterExpression.parse); query-option inputs stay encoded
(QueryOptions.parse decodes). Negative cases are kept too: they seed the error paths.

Also writes 16 seeds for the grammar-aware mode (`gen-*`, see main()).

Usage: scripts/abnf_fuzz_seeds.py   (from the repository root; rewrites the abnf-* and gen-* seeds)
"""
import os
import random
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
YAML = os.path.join(ROOT, "Tests/ODataQueryTests/ABNF/odata-abnf-testcases.yaml")
OUT = os.path.join(ROOT, "Fuzz/Corpus/FuzzFilter")

QUERY_RULES = {"queryOptions", "systemQueryOption", "customQueryOption", "filter", "orderby", "orderBy",
               "select", "expand", "search", "compute", "skiptoken", "deltatoken"}
EXPRESSION_RULES = {"boolCommonExpr", "boolcommonExpr", "commonExpr", "firstMemberExpr", "propertyPathExpr",
                    "isofExpr", "notExpr", "primitiveLiteral", "binaryLiteral", "boolean", "null", "date",
                    "dateTimeOffsetLiteral", "dateTimeOffsetValueInUrl", "decimalLiteral", "doubleLiteral",
                    "singleLiteral", "durationLiteral", "enumLiteral", "guid", "sbyteLiteral", "int16Literal",
                    "int32Literal", "int64Literal", "stringLiteral", "timeOfDayLiteral",
                    "geographyCollection", "geographyLineString", "geographyMultiLineString",
                    "geographyMultiPoint", "geographyMultiPolygon", "geographyPoint", "geographyPolygon",
                    "geometryCollection", "geometryLineString", "geometryMultiLineString", "geometryMultiPoint",
                    "geometryMultiPolygon", "geometryPoint", "geometryPolygon"}
LAMBDA_RULES = {"anyExpr"}


class LoadError(Exception):
    pass


def indentation(line):
    return len(line) - len(line.lstrip(" "))


def is_blank(line):
    return all(c in " \t" for c in line)


def plain(lines):
    result, pending, started = "", 0, False
    for line in lines:
        content = line.lstrip(" \t")
        hash_at = content.find(" #")
        if hash_at >= 0:
            content = content[:hash_at]
        content = content.rstrip(" \t")
        if not content:
            if started:
                pending += 1
            continue
        if started:
            result += " " if pending == 0 else "\n" * pending
        result += content
        pending, started = 0, True
    return result


def quoted(chars, double, line):
    result, protected, i = [], 0, 0
    quote = '"' if double else "'"
    escapes = {"n": "\n", "t": "\t", "\t": "\t", "r": "\r", "0": "\0", " ": " ", '"': '"', "/": "/", "\\": "\\"}

    def skip(i):
        while i < len(chars) and chars[i] in " \t":
            i += 1
        return i

    while i < len(chars):
        c = chars[i]
        if c == quote:
            if not double and i + 1 < len(chars) and chars[i + 1] == "'":
                result.append("'")
                protected = len(result)
                i += 2
                continue
            if not all(x in " \n\t" for x in chars[i + 1:]):
                raise LoadError(f"line {line}: text after the closing quote")
            return "".join(result)
        if double and c == "\\":
            if i + 1 >= len(chars):
                break
            e = chars[i + 1]
            i += 2
            if e in escapes:
                result.append(escapes[e])
            elif e == "\n":
                i = skip(i)
            elif e in "xu":
                n = 2 if e == "x" else 4
                result.append(chr(int(chars[i:i + n], 16)))
                i += n
            else:
                raise LoadError(f"line {line}: unsupported escape \\{e}")
            protected = len(result)
            continue
        if c == "\n":
            while len(result) > protected and result and result[-1] in " \t":
                result.pop()
            i += 1
            breaks = 0
            while True:
                i = skip(i)
                if i < len(chars) and chars[i] == "\n":
                    breaks += 1
                    i += 1
                else:
                    break
            result.append(" " if breaks == 0 else "\n" * breaks)
            continue
        result.append(c)
        i += 1
    raise LoadError(f"line {line}: unterminated quoted scalar")


def scalar(lines, line):
    lines = list(lines)
    while len(lines) > 1 and is_blank(lines[0]):
        lines.pop(0)
    joined = "\n".join(lines)
    trimmed = joined.lstrip(" \n")
    if trimmed.startswith('"'):
        return quoted(trimmed[1:], True, line)
    if trimmed.startswith("'"):
        return quoted(trimmed[1:], False, line)
    return plain(lines)


def load(text):
    lines = [l[:-1] if l.endswith("\r") else l for l in text.split("\n")]
    header = lines.index("TestCases:")
    cases, index = [], header + 1
    while index < len(lines):
        line = lines[index]
        if is_blank(line) or line.lstrip(" ").startswith("#"):
            index += 1
            continue
        item = indentation(line)
        if not line[item:].startswith("- "):
            raise LoadError(f"line {index + 1}: expected '- '")
        key_indent = item + 2
        fields, first = {}, True
        while index < len(lines):
            current = lines[index]
            if not first:
                if is_blank(current):
                    index += 1
                    continue
                if indentation(current) != key_indent:
                    break
            body = current[key_indent:]
            colon = body.find(":")
            if colon < 0:
                raise LoadError(f"line {index + 1}: expected 'Key: value'")
            key, rest = body[:colon], body[colon + 1:].lstrip(" ")
            value_lines, nxt = [rest], index + 1
            while nxt < len(lines) and (is_blank(lines[nxt]) or indentation(lines[nxt]) > key_indent):
                value_lines.append(lines[nxt])
                nxt += 1
            while len(value_lines) > 1 and is_blank(value_lines[-1]):
                value_lines.pop()
            if key in ("Name", "Rule", "Input", "FailAt"):
                fields[key] = scalar(value_lines, index + 1)
            index, first = nxt, False
        if not all(k in fields for k in ("Name", "Rule", "Input")):
            raise LoadError(f"line {index}: a test case needs Name, Rule and Input")
        cases.append(fields)
    return cases


def main():
    with open(YAML, encoding="utf-8") as f:
        cases = load(f.read())
    if len(cases) != 840:  # ABNFTestCaseLoaderTests checks the same count
        sys.exit(f"expected 840 cases, loaded {len(cases)}")
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if name.startswith("abnf-"):
            os.remove(os.path.join(OUT, name))
    written = set()
    count = 0
    for index, case in enumerate(cases):
        rule, text = case["Rule"], case["Input"]
        if rule in QUERY_RULES:
            seed = text
        elif rule == "odataRelativeUri" and "?" in text:
            seed = text[text.index("?") + 1:]
        elif rule in EXPRESSION_RULES:
            seed = urllib.parse.unquote(text, errors="surrogateescape")
        elif rule in LAMBDA_RULES:
            seed = "Products/" + urllib.parse.unquote(text, errors="surrogateescape")
        else:
            continue
        data = seed.encode("utf-8", errors="surrogateescape")
        if data in written:
            continue
        written.add(data)
        kind = "neg" if "FailAt" in case else "pos"
        with open(os.path.join(OUT, f"abnf-{index:03d}-{rule}-{kind}"), "wb") as f:
            f.write(data)
        count += 1
    print(f"{count} seeds from {len(cases)} cases written to {os.path.relpath(OUT, ROOT)}")
    # Seeds for the grammar-aware mode (Fuzz/Sources/FuzzFilter/Generator.swift): the marker byte 0x00,
    # then 0x00 (an expression) or 0x01 (a query string), then choice bytes from a fixed-seed PRNG.
    rng = random.Random(4_01)
    for name in os.listdir(OUT):
        if name.startswith("gen-"):
            os.remove(os.path.join(OUT, name))
    for n in range(16):
        mode = n % 2
        data = bytes([0, mode]) + bytes(rng.randrange(256) for _ in range(24 + 8 * n))
        with open(os.path.join(OUT, f"gen-{'query' if mode else 'expr'}-{n:02d}"), "wb") as f:
            f.write(data)
    print(f"16 grammar-mode seeds written")


if __name__ == "__main__":
    main()
