#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Answers a firmware's prompts at a VM's serial console, as a person at the console would:
# runs CMD (QEMU, its serial port on standard input and output), copies all the console
# prints to LOG (and to LOG.text without the terminal's control sequences, to be read), and
# for each STEP in turn waits until the console shows its text, then types
# its keys. The text is matched on what the console prints since the previous step, with the
# terminal's control sequences (cursor moves, colours, line drawing) taken out. The secure
# boot test answers shim's MokManager with it.
#
# A STEP is TEXT=>KEYS. KEYS takes Python's string escapes, and these names in braces:
# {down} (the down-arrow key), {enter}, {pause} (half a second between keys).
#
# Exits with CMD's status once it ends and every step was taken; 3 if CMD ended first (the
# step it waited for is printed); 124 if LIMIT seconds passed first (CMD is killed).
#
# Usage: console.py LOG LIMIT [STEP...] -- CMD...
import codecs
import os
import re
import select
import subprocess
import sys
import time

KEYS = {"down": "\x1b[B", "enter": "\r"}
# CSI and other escape sequences, a lone ESC, and the shift-in/shift-out of line drawing.
CONTROL = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b.|[\x0e\x0f]")


def keys(text):
    """The keystrokes of a step's KEYS, as a list of strings to send (None: a pause)."""
    out = []
    for part in re.split(r"(\{[a-z]+\})", text):
        if part == "{pause}":
            out.append(None)
        elif part.startswith("{") and part[1:-1] in KEYS:
            out.append(KEYS[part[1:-1]])
        elif part:
            out.extend(codecs.decode(part, "unicode_escape"))
    return out


def plain(log_path):
    """Writes LOG.text: the console's text, its control sequences and runs of spaces each one space."""
    with open(log_path, "rb") as log, open(log_path + ".text", "wb") as text:
        text.write(re.sub(rb" {2,}", b" ", CONTROL.sub(b" ", log.read())))


def main():
    args = sys.argv[1:]
    if "--" not in args or len(args) < 3:
        sys.exit("usage: console.py LOG LIMIT [TEXT=>KEYS...] -- CMD...")
    sep = args.index("--")
    log_path, limit = args[0], float(args[1])
    steps = []
    for step in args[2:sep]:
        text, _, send = step.partition("=>")
        steps.append((text, keys(send)))
    cmd = args[sep + 1:]

    deadline = time.monotonic() + limit
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    seen = b""
    with open(log_path, "wb") as log:
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            if ready:
                data = os.read(proc.stdout.fileno(), 65536)
                if not data:
                    break
                log.write(data)
                log.flush()
                seen += data
            shown = CONTROL.sub(b"", seen) if steps else b""
            at = shown.find(steps[0][0].encode()) if steps else -1
            if at >= 0:
                text, send = steps.pop(0)
                print(f"console: saw '{text}'", file=sys.stderr)
                # What came after it may hold the next step's text.
                seen = shown[at + len(text.encode()):]
                # Let the firmware draw the rest of its screen and wait for a key.
                time.sleep(1)
                for key in send:
                    if key is None:
                        time.sleep(0.5)
                        continue
                    try:
                        proc.stdin.write(key.encode())
                        proc.stdin.flush()
                    except BrokenPipeError:
                        break  # CMD ended: its status and log tell why
                    time.sleep(0.1)
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                plain(log_path)
                print(f"console: stopped after {limit:.0f} s", file=sys.stderr)
                sys.exit(124)
    status = proc.wait()
    plain(log_path)
    if steps:
        print(f"console: the command ended (status {status}) before the console showed"
              f" '{steps[0][0]}'", file=sys.stderr)
        sys.exit(3)
    sys.exit(status)


if __name__ == "__main__":
    main()
