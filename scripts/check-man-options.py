#!/usr/bin/env python3
"""make check-man: the man page and --help must list the same options with the same defaults.

--help is printed from the option table (user/cli/options.c); the man page (docs/mmproxy-bpf.8) is written by hand.
For every command, each long option --help lists must have a .TP entry in the man page and the other way round, and
where both state a default (`default X`), X must be the same. Prints one line per difference, exits 1 if any.

    scripts/check-man-options.py build/mmproxy-bpf docs/mmproxy-bpf.8
"""
import re
import subprocess
import sys

COMMANDS = ['run', 'check', 'setup-routing', 'cleanup-routing', 'stats', 'cleanup']
OPT_LINE = re.compile(r'^\s{1,8}(?:-\w, )?--([a-z0-9][a-z0-9-]*)')
DEFAULT = re.compile(r'default:? ([^\s,;)]+)')


def help_options(binary):
    """{option: its help text} over every command's --help."""
    opts = {}
    for cmd in COMMANDS:
        out = subprocess.run([binary, cmd, '--help'], capture_output=True, text=True).stdout
        cur = None
        for line in out.splitlines():
            m = OPT_LINE.match(line)
            if m:
                cur = m.group(1)
                opts.setdefault(cur, '')
                opts[cur] += ' ' + line[m.end():]
            elif cur and line.startswith(' ' * 20):
                opts[cur] += ' ' + line.strip()
            else:
                cur = None
    return opts


def man_options(path):
    """{option: its paragraph} for every .TP entry that names a long option."""
    text = open(path, encoding='utf-8').read().replace('\\-', '-')
    text = re.sub(r'\\f[BIRP]', '', text)
    opts = {}
    blocks = text.split('\n.TP\n')[1:]
    for b in blocks:
        head, _, body = b.partition('\n')
        for name in re.findall(r'--([a-z0-9][a-z0-9-]*)', head):
            body_text = re.split(r'\n\.(?:SH|SS|TP)\b', body)[0]
            opts[name] = ' '.join(body_text.split())
    return opts


def main():
    binary, man = sys.argv[1], sys.argv[2]
    h, m = help_options(binary), man_options(man)
    bad = []
    for name in sorted(set(h) - set(m) - {'help'}):
        bad.append(f'--{name} is in --help but not in {man}: add a .TP entry for it')
    for name in sorted(set(m) - set(h)):
        bad.append(f'--{name} is in {man} but no command\'s --help lists it: remove it or add it to user/cli/options.c')
    for name in sorted(set(h) & set(m)):
        dh, dm = DEFAULT.search(h[name]), DEFAULT.search(m[name])
        if dh and dm and dh.group(1).rstrip('.') != dm.group(1).rstrip('.'):
            bad.append(f'--{name}: --help says default {dh.group(1)}, {man} says {dm.group(1)}: make them agree')
    for line in bad:
        print(line)
    if bad:
        print(f'check-man: {len(bad)} differences between --help and {man}')
        return 1
    print(f'check-man: --help and {man} list the same {len(h)} options')
    return 0


if __name__ == '__main__':
    sys.exit(main())
