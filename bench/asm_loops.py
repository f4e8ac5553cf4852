#!/usr/bin/python3
"""Instruction mix of the innermost loops in an object file, to compare what gcc and clang make of
the same kernel source (bench/HISTORY.md, "AVX2 inner loops: gcc 12 against clang 14").

    bench/asm_loops.py OBJECT REGEX [COUNT_KEY] [TOP]

REGEX selects functions by demangled name; COUNT_KEY (fma, dot, bf16dot) ranks their innermost loops (a loop
is a backward jump inside one function that holds no other such jump). Per loop it prints the
instructions, FMAs, int8 dot steps (vpmaddubsw / vpdpbusd), vpmaddwd, bf16 dots (vdpbf16ps), int->float converts,
shifts and ands, shuffles, broadcasts, vector memory operands and vector accesses to the stack
frame (rsp / rbp), which inside a hot loop are register spills and reloads. Needs binutils' objdump.
Bad arguments print one line and exit with 2; an object objdump cannot read exits with 1.
clang names OpenMP-outlined regions `.omp_outlined.`, so a kernel inlined into one is not found by
its template name there.
"""
import collections
import re
import subprocess
import sys


def innermost_loops(obj, pattern):
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", "-M", "intel", obj],
                          capture_output=True, text=True, check=True).stdout
    for chunk in re.split(r"\n(?=[0-9a-f]+ <)", text):
        head = re.match(r"([0-9a-f]+) <(.*)>:", chunk)
        if not head or not pattern.search(head.group(2)):
            continue
        ins = []  # (address, mnemonic, operands)
        for line in chunk.splitlines()[1:]:
            m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)", line)
            if m:
                ins.append((int(m.group(1), 16), m.group(2), m.group(3)))
        at = {a: i for i, (a, _, _) in enumerate(ins)}
        loops = []
        for i, (a, op, arg) in enumerate(ins):
            t = re.match(r"([0-9a-f]+) <", arg) if op.startswith("j") else None
            target = int(t.group(1), 16) if t else None
            if target is not None and target <= a and target in at:  # a backward jump: a loop
                loops.append((at[target], i))
        for s, e in loops:
            if any(s <= s2 and e2 <= e and (s2, e2) != (s, e) for s2, e2 in loops):
                continue  # not innermost
            yield head.group(2), ins[s][0], mix(ins[s:e + 1])


def mix(body):
    c = collections.Counter()
    for _, op, arg in body:
        c["n"] += 1
        c["fma"] += bool(re.match(r"vfn?m(add|sub)", op))
        c["dot"] += op == "vpmaddubsw" or op.startswith("vpdpbusd")
        c["maddwd"] += op == "vpmaddwd"
        c["bf16dot"] += op == "vdpbf16ps"
        c["cvt"] += op.startswith("vcvtdq2ps")
        c["shift_and"] += bool(re.match(r"vps[rl]|vpand", op))
        c["shuffle"] += bool(re.match(r"vperm|vpshuf|vinsert|vextract", op))
        c["bcast"] += bool(re.match(r"vp?broadcast", op))
        mem = op.startswith("v") and "[" in arg
        c["vec_mem"] += mem
        c["stack"] += mem and ("rsp" in arg or "rbp" in arg)
    return c


COLS = ["n", "fma", "dot", "maddwd", "bf16dot", "cvt", "shift_and", "shuffle", "bcast", "vec_mem", "stack"]


def main():
    usage = "usage: asm_loops.py OBJECT REGEX [fma|dot|bf16dot] [TOP]"
    if not 3 <= len(sys.argv) <= 5:
        print(usage, file=sys.stderr)
        return 2
    key = sys.argv[3] if len(sys.argv) > 3 else "fma"
    top = sys.argv[4] if len(sys.argv) > 4 else "8"
    if key not in ("fma", "dot", "bf16dot") or not top.isdigit() or int(top) < 1:
        print(f"asm_loops.py: COUNT_KEY must be fma, dot or bf16dot and TOP a positive integer ({usage})", file=sys.stderr)
        return 2
    try:
        pattern = re.compile(sys.argv[2])
    except re.error as e:
        print(f"asm_loops.py: REGEX {sys.argv[2]!r} is not a regular expression: {e}", file=sys.stderr)
        return 2
    try:
        rows = [r for r in innermost_loops(sys.argv[1], pattern) if r[2][key] > 0]
    except (OSError, subprocess.CalledProcessError) as e:
        err = getattr(e, "stderr", None) or str(e)
        print(f"asm_loops.py: cannot disassemble {sys.argv[1]}: {err.strip().splitlines()[-1]}", file=sys.stderr)
        return 1
    rows.sort(key=lambda r: -r[2][key])
    for name, addr, c in rows[:int(top)]:
        name = re.sub(r"mq::kdetail::|\(anonymous namespace\)::", "", name).split("(")[0]
        print(f"{addr:6x} " + " ".join(f"{k}={c[k]}" for k in COLS) + f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
