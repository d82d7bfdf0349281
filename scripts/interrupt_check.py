#!/usr/bin/env python3
"""interrupt_check.py [VOLUA] [DEVICE]: Ctrl-C during a long op in the REPL returns to the prompt
with the session intact. Drives `volua` (default build/bin/volua) in a pseudo-terminal: sets a
variable, starts a loop of large conv3d calls on DEVICE (default cuda when available), sends
Ctrl-C after a second, then checks that "interrupted" was printed, the prompt came back, the
variable is still there and a new op runs. Exit 0 when all holds. Used by scripts/gpu_check.sh
on the GPU machine (where tmux, used by spec/repl_spec.lua, is not installed)."""
import os, pty, select, sys, time

volua = sys.argv[1] if len(sys.argv) > 1 else "build/bin/volua"
device = sys.argv[2] if len(sys.argv) > 2 else None

pid, fd = pty.fork()
if pid == 0:
    os.environ["VOLUA_HISTORY"] = ""
    os.execv(volua, [volua])

buf = b""


def read_until(pattern, timeout):
    global buf
    end = time.time() + timeout
    while time.time() < end:
        if pattern in buf:
            return True
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                break
    return pattern in buf


def send(line):
    os.write(fd, line.encode())


def fail(msg):
    print("interrupt_check: FAILED:", msg)
    print(buf.decode(errors="replace")[-2000:])
    os.kill(pid, 9)
    sys.exit(1)


if not read_until(b"> ", 20):
    fail("no prompt")
dev = device or "cuda"
send('dev = vol.cuda_available() and "%s" or "cpu"; keep = 1234\n' % dev)
send('x = vol.rand({4, 16, 64, 64, 64}, {device = dev}); w = vol.rand({16, 16, 5, 5, 5}, {device = dev})\n')
send('print("start " .. dev); for i = 1, 100000 do y = vol.conv3d(x, w) end; vol.sync(); print("loop ended")\n')
if not read_until(b"start ", 60):
    fail("the loop did not start")
time.sleep(1.5)
t0 = time.time()
os.write(fd, b"\x03")
if not read_until(b"interrupted", 60):
    fail("no 'interrupted' after Ctrl-C")
took = time.time() - t0
buf = b""
send('print("alive", keep, vol.conv3d(x, w).shape[2], dev)\n')
if not read_until(b"alive", 30) or not read_until(b"1234", 5):
    fail("the session did not survive")
print("interrupt_check: Ctrl-C during a loop of conv3d on %s returned to the prompt in %.2f s; "
      "the session kept its variables and ran the next op" % (dev, took))
send("os.exit(0)\n")
os.waitpid(pid, 0)
