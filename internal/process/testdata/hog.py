# usage: python3 hog.py BYTES
# Allocates and touches BYTES of memory in 16 MiB steps, then sleeps.
# Prints "allocated" when it got all of it.
import sys, time

want = int(sys.argv[1])
step = 16 << 20
held = []
while len(held) * step < want:
    held.append(b"x" * step)
print("allocated", len(held) * step, flush=True)
time.sleep(60)
