#!/usr/bin/env python3
"""compare.py HEAP_RESULTS LEANSTORE_RESULTS DIFF_DIR

Compares the result files (*.out) of a suite run on leanstore with those of
the same suite run on heap.  Per differing test it writes DIFF_DIR/T.diff
(unified, heap = '-', leanstore = '+') and prints one line:

  ORDER-ONLY  T              the same lines in another order (allowed: row
                             order of queries without ORDER BY)
  DIFFERS     T  order=a plan=b other=c
                             hunks that only reorder lines / that only touch
                             EXPLAIN output lines / anything else

then a count line.  Exit status 0 (it reports, the caller judges)."""
import difflib
import os
import re
import sys

PLAN = re.compile(r'(QUERY PLAN|Scan|->|Cond:|Filter:|Sort Key|Join|Append|Aggregate|'
                  r'Gather|Workers|Materialize|Memoize|Hash|Output:|Sort|Limit|Result|'
                  r'Unique|SetOp|InitPlan|SubPlan|rows\)|^-+$|Heap Blocks|Rows Removed)')


def hunks(lines):
    cur = None
    for line in lines:
        if line.startswith('@@'):
            if cur:
                yield cur
            cur = []
        elif cur is not None:
            cur.append(line)
    if cur:
        yield cur


def classify(diff):
    c = {'order': 0, 'plan': 0, 'other': 0}
    for h in hunks(diff):
        minus = [l[1:] for l in h if l.startswith('-')]
        plus = [l[1:] for l in h if l.startswith('+')]
        if sorted(minus) == sorted(plus):
            c['order'] += 1
        elif all(PLAN.search(l.strip()) or l.strip() == '' for l in minus + plus):
            c['plan'] += 1
        else:
            c['other'] += 1
    return c


def main():
    heap, ls, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith('.diff'):
            os.unlink(os.path.join(out, f))
    names = sorted(set(f[:-4] for d in (heap, ls) if os.path.isdir(d)
                       for f in os.listdir(d) if f.endswith('.out')))
    same = order = differs = missing = 0
    for t in names:
        hp, lp = os.path.join(heap, t + '.out'), os.path.join(ls, t + '.out')
        if not os.path.exists(lp) or not os.path.exists(hp):
            print('%-11s %s' % ('NO-RESULT', t + (' (leanstore)' if not os.path.exists(lp) else ' (heap)')))
            missing += 1
            continue
        a = open(hp, errors='replace').read().splitlines(True)
        b = open(lp, errors='replace').read().splitlines(True)
        if a == b:
            same += 1
            continue
        diff = list(difflib.unified_diff(a, b, 'heap/' + t + '.out', 'leanstore/' + t + '.out', n=3))
        with open(os.path.join(out, t + '.diff'), 'w') as f:
            f.writelines(diff)
        if sorted(a) == sorted(b):
            print('%-11s %s' % ('ORDER-ONLY', t))
            order += 1
        else:
            c = classify(diff)
            print('%-11s %-28s order=%d plan=%d other=%d' % ('DIFFERS', t, c['order'], c['plan'], c['other']))
            differs += 1
    print('%d tests: %d identical, %d row order only, %d differ, %d without result'
          % (len(names), same, order, differs, missing))


if __name__ == '__main__':
    main()
