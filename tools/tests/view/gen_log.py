"""Synthetic memory-event logs (RMM's CSV) for the viewer's browser test and
load-time benchmark.

    python3 tools/tests/view/gen_log.py EVENTS OUT.csv [--seed N]

Two threads and two streams allocate and free sizes from 256 B to 1 MiB at
bump addresses in a 1 GiB range, one to three microseconds apart; `known`
(returned by write_log) is one allocation of a distinctive size on its own
thread and stream, in the middle of the log, freed a while later; one
request fails (`allocate failure`) soon after it.
"""
import random
import sys

KNOWN_SIZE = 123456789
KNOWN_THREAD = "4242"
KNOWN_STREAM = "0x7"
FAILED_SIZE = 987654321
BASE = 0x7F0000000000
SPAN = 1 << 30


def fmt_time(us):
    s, frac = divmod(us, 1_000_000)
    return "%02d:%02d:%02d.%06d" % (s // 3600 % 24, s // 60 % 60, s % 60, frac)


def write_log(path, events, seed=1):
    """Writes the log; returns the known allocation's and the failure's rows
    as dicts of the CSV's fields (plus `index`, the allocation's index among
    successful allocations, and `line`, its 1-based line)."""
    rng = random.Random(seed)
    live = []
    known = {}
    failure = {}
    t = 10 * 3600 * 1_000_000
    bump = 0
    allocs = 0
    known_at = events // 2
    known_free_at = known_at + max(4, events // 50)
    with open(path, "w") as out:
        out.write("Thread,Time,Action,Pointer,Size,Stream\n")
        line = 1
        for i in range(events):
            t += rng.randint(1, 3)
            line += 1
            if i == known_at:
                ptr = BASE + SPAN + 0x100000
                row = (KNOWN_THREAD, fmt_time(t), "allocate", "0x%x" % ptr, KNOWN_SIZE, KNOWN_STREAM)
                known = dict(zip(("thread", "time", "action", "pointer", "size", "stream"), row))
                known.update(index=allocs, line=line)
                allocs += 1
            elif i == known_free_at:
                row = (KNOWN_THREAD, fmt_time(t), "free", known["pointer"], KNOWN_SIZE, KNOWN_STREAM)
                known.update(free_time=row[1], free_line=line)
            elif i == known_at + 2:
                row = (KNOWN_THREAD, fmt_time(t), "allocate failure", "0x0", FAILED_SIZE, KNOWN_STREAM)
                failure = dict(zip(("thread", "time", "action", "pointer", "size", "stream"), row))
                failure.update(line=line)
            elif live and (len(live) > 64 or rng.random() < 0.45):
                ptr, size, thread, stream = live.pop(rng.randrange(len(live)))
                row = (thread, fmt_time(t), "free", "0x%x" % ptr, size, stream)
            else:
                size = 256 << rng.randrange(13)
                if bump + size > SPAN:
                    bump = 0
                ptr = BASE + bump
                bump += size
                thread = rng.choice(("101", "102"))
                stream = rng.choice(("0x0", "0x1"))
                live.append((ptr, size, thread, stream))
                row = (thread, fmt_time(t), "allocate", "0x%x" % ptr, size, stream)
                allocs += 1
            out.write("%s,%s,%s,%s,%s,%s\n" % row)
    return known, failure


def main(argv):
    events, out = int(argv[1]), argv[2]
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1
    known, failure = write_log(out, events, seed)
    print("wrote %s: %d events; known allocation %s" % (out, events, known))


if __name__ == "__main__":
    main(sys.argv)
