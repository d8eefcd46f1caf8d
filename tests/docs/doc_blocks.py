"""The fenced code blocks of README.md and docs/*.md (shared by the docs test and the build, which compiles
the C++ blocks: tests/CMakeLists.txt runs this file as a script to write them out)."""
import os
import re
import sys

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def blocks(path):
    """[(line, lang, text)] of the file's fenced blocks, indentation of the fence removed."""
    out = []
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = len(m.group(1)), m.group(2), i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        out.append((start, lang, "\n".join(body) + "\n"))
        i += 1
    return out


def doc_files(root):
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


def cpp_name(path, index):
    """The program the build makes of a file's index-th C++ block: doc-README-0, doc-CPP-0, ..."""
    return "doc-%s-%d" % (os.path.splitext(os.path.basename(path))[0], index)


def main():
    root, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for path in doc_files(root):
        cpp = [b for b in blocks(path) if b[1] == "cpp"]
        for k, (_, _, text) in enumerate(cpp):
            name = cpp_name(path, k)
            target = os.path.join(out_dir, name + ".cc")
            old = open(target).read() if os.path.exists(target) else None
            if old != text:
                with open(target, "w") as f:
                    f.write(text)
            names.append(name)
    print(";".join(names), end="")


if __name__ == "__main__":
    main()
