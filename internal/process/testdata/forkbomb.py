# usage: python3 forkbomb.py N
# Tries to have N processes (sleeping children) at once, as a fork loop
# does: a refused fork is retried until the command is killed. Prints
# "made N" once all exist (never, when it is capped).
import os, sys, time

want = int(sys.argv[1])
made = refused = 0
while made < want:
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        time.sleep(0.001)
        continue
    if pid == 0:
        try:
            os.execv("/bin/sleep", ["sleep", "60"])
        finally:
            os._exit(127)
    made += 1
print("made", made, "refused", refused, flush=True)
time.sleep(60)
