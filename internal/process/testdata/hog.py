# usage: python3 hog.py BYTES
# Allocates and touches BYTES of memory in 16 MiB steps, then sleeps.
# Prints what it holds after each step, and "allocated" when it got
# all of it.
import sys, time

want = int(sys.argv[1])
step = 16 << 20
held = []
while len(held) * step < want:
    held.append(b"x" * step)
    print("held", len(held) * step, flush=True)
print("allocated", len(held) * step, flush=True)
time.sleep(60)
