#!/usr/bin/env python3
"""make check-refs: every path and every docs/DESIGN.md section cited in the code and the docs must exist.

A cited path is a token that names a file by extension (`user/policy/client_policy.c`, `tc_handoff.c`,
`t12-tc-restart.sh`) or a tracked folder with a trailing slash (`user/engine/tc/`). It resolves when it exists
relative to the repository root, to the citing file's folder or one of its parents, to user/ or tests/integration/,
or, for a bare file name, anywhere in the tree. A section is `§N` or `§Na`; it must be a heading of docs/DESIGN.md.
Nothing may cite the workspace's shared folder beside the clone (SHARED below), which a clone does not have.

Prints one line per stale reference (file:line: what, and how to fix) and exits 1 when there is any.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
EXTS = 'c|h|sh|md|mk|py|service|socket|8'
PATH_RE = re.compile(r'(?<![\w./$}{\\-])((?:\.\./|\.?/)?(?:[\w.-]+/)*[\w.-]+\.(?:%s))(?![\w/-])' % EXTS)
DIR_RE = re.compile(r'(?<![\w./$}{\\-])((?:user|bpf|include|tests|bench|scripts|docs|debian|vmlinux)(?:/[\w.-]+)*/)(?![\w.-])')
# Spelled in two parts so that this file does not cite it itself.
SHARED = '..' + '/shared'
SECTION_RE = re.compile(r'§\s?(\d+[a-z]?)')
# Lines that cite another document's sections or name files that are not ours.
FOREIGN_SECTION = re.compile(r'RFC|proxy-protocol|spec|IEEE|POSIX', re.I)
# Names that are not paths in this tree: outputs, examples, system files, other projects' files.
IGNORE = re.compile(r'''^(
    /|~|https?:|.*\*|.*\$|.*%|.*<|.*\{|
    .*\.(png|json|jsonl)$|            # results written by the benches (some kept, some not)
    (allowed|lbs|endpoints|nlb-subnets|example|https|imaps|NAME|foo|bar|x|y|a|b)\.(txt|conf)$|
    .*(proxy-protocol|params|CONTRIBUTING|ARCHITECTURE|EXAMPLE)\.(txt|h|md)$|
    (vmlinux|bpf_helpers|bpf_endian|bpf_tracing|bpf_core_read|libbpf|bpf|libxdp|xdp_helpers|
     linux/[\w/.-]+|netinet/[\w.-]+|sys/[\w.-]+|net/[\w.-]+|arpa/[\w.-]+|bpf/bpf_[\w.-]+|bpf/libbpf[\w.-]*|
     xdp/[\w.-]+|systemd/[\w.-]+|cmocka|microhttpd|cap-ng|stdio|stdlib|string|errno|unistd|fcntl|
     \w+)\.h$
)''', re.X)


def tracked():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files', '--cached', '--others', '--exclude-standard'], capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if f]


def design_sections():
    secs = set()
    with open(os.path.join(ROOT, 'docs/DESIGN.md'), encoding='utf-8') as f:
        for line in f:
            m = re.match(r'#+ .*?§(\d+[a-z]?)', line)
            if m:
                secs.add(m.group(1))
    return secs


# The kernel's and libbpf's own files, cited as where a behaviour comes from.
KERNEL = re.compile(r'^(fs|net|kernel|mm|include/(net|linux|uapi)|tools|arch|drivers|lib|samples|src)/')


def not_a_path(ref):
    base = os.path.basename(ref)
    stem = base.rsplit('.', 1)[0]
    if base.startswith('.') or base == 'socket.socket':
        return True  # a pattern (%.bpf.c) or Python's socket.socket
    if not base.endswith('.md') and re.search(r'(^|[_-])[A-Z]+($|[_-])', stem):
        return True  # a placeholder: test_X.c, PKG.service, NAME.conf
    if re.match(r'^[\d.]+$', stem) or len(stem) < 2:
        return True  # an address (5.6.7.8) or a one-letter example
    # More than one dot: a sysctl or a field (net.ipv4.conf, a.b.c), unless it is one of our double extensions.
    return base.count('.') > 1 and not base.endswith(('.bpf.c', '.skel.h', '.bpf.o'))


def resolves(ref, citing, files, dirs, basenames):
    ref = ref.lstrip('./') if ref.startswith('./') else ref
    if ref.endswith('/'):
        return ref.rstrip('/') in dirs or any(d.endswith('/' + ref.rstrip('/')) for d in dirs)
    if '/' not in ref:
        return ref in basenames
    bases = ['', 'user/', 'tests/integration/', 'tests/', 'bpf/']
    d = os.path.dirname(citing)
    while d:
        bases.append(d + '/')
        d = os.path.dirname(d)
    for b in bases:
        p = os.path.normpath(b + ref)
        if p in files or p in dirs:
            return True
    return False


def main():
    files = set(tracked())
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    basenames = {os.path.basename(f) for f in files}
    readable = sorted(files)
    files = files | {'debian/mmproxy-bpf.service'}  # written by debian/rules from scripts/
    # Generated at build time, cited on purpose: one skeleton per BPF source file.
    basenames |= {os.path.basename(f)[:-len('.bpf.c')] + '.skel.h' for f in files
                  if f.startswith(('bpf/', 'tests/tools/bpf/')) and f.endswith('.bpf.c')}
    basenames |= {'mmproxy-bpf'}
    secs = design_sections()
    bad = 0
    for f in readable:
        if f.startswith(('vmlinux/', 'tests/fuzz/seeds', 'tests/fuzz/corpus', 'bench/results/')) or \
           f.endswith(('.png', '.json', '.jsonl')) or f.startswith('debian/patches'):
            continue
        path = os.path.join(ROOT, f)
        try:
            with open(path, encoding='utf-8') as fh:
                lines = fh.readlines()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        for n, line in enumerate(lines, 1):
            if re.match(r'\s*#\s*include\s*<', line):
                continue
            if SHARED in line:
                print(f'{f}:{n}: cites {SHARED}, which a clone does not have: cite docs/DESIGN.md instead')
                bad += 1
            if not FOREIGN_SECTION.search(line):
                for m in SECTION_RE.finditer(line):
                    if m.group(1) not in secs:
                        print(f'{f}:{n}: §{m.group(1)} is no section of docs/DESIGN.md: cite an existing one')
                        bad += 1
            for rx in (PATH_RE, DIR_RE):
                for m in rx.finditer(line):
                    ref = m.group(1)
                    if IGNORE.match(ref) or ref.startswith('build') or KERNEL.match(ref) or not_a_path(ref):
                        continue
                    if not resolves(ref, f, files, dirs, basenames):
                        print(f'{f}:{n}: {ref} does not exist: fix the path (git ls-files | grep NAME)')
                        bad += 1
    if bad:
        print(f'check-refs: {bad} stale references')
        return 1
    print(f'check-refs: every path and § cited in {len(files)} tracked files exists')
    return 0


if __name__ == '__main__':
    sys.exit(main())
