"""The README's generated `status` block and the shell blocks of README.md and docs/ that are marked
to run on the sandbox: read here, written by scripts/readme-status, checked by tests/e2e/test_docs.py
(and, pure, by tests/unit/test_docs_check.py)."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
BEGIN = "<!-- status:begin"
END = "<!-- status:end -->"
PROMPT = "$ kubectl gpuisolate status\n"
DOCTEST = "<!-- doctest: sandbox"
EXIT = re.compile(r"#.*\bexit (\d+)\b")
GENERATED_PREFIX = 58    # maxGeneratedNameLength: 63 less the 5 random characters


def status_block(readme):
    """The output recorded in the README's status block (after its prompt line), or None."""
    begin = readme.find(BEGIN)
    end = readme.find(END, begin)
    if begin < 0 or end < 0:
        return None
    inner = readme[readme.index("\n", begin) + 1:end]
    fence = "```text\n" + PROMPT
    if not inner.startswith(fence) or not inner.endswith("```\n"):
        return None
    return inner[len(fence):-len("```\n")]


def with_status(readme, output):
    """The README with its status block holding ``output`` (what `status` printed on stdout)."""
    begin = readme.index(BEGIN)
    start = readme.index("\n", begin) + 1
    end = readme.index(END, begin)
    return readme[:start] + "```text\n" + PROMPT + output + ("" if output.endswith("\n") else "\n") \
        + "```\n" + readme[end:]


def without_random_suffixes(text, generate_names):
    """``text`` with the five random characters the API server appends to each generateName
    (a controller's pods) replaced by '*****': they change with every start of the sandbox,
    and they are always five, so the columns keep their widths."""
    # The API server cuts a generateName to 58 characters before it appends them.
    for prefix in sorted({name[:GENERATED_PREFIX] for name in generate_names}, key=len, reverse=True):
        text = re.sub(re.escape(prefix) + r"[a-z0-9]{5}\b", prefix + "*****", text)
    return text


def marked_commands(markdown):
    """(line number, command, expected exit code) of each line of the shell blocks marked
    ``<!-- doctest: sandbox ... -->`` on the line before their fence.  A comment saying
    "exit N" sets the expected code (default 0)."""
    lines = markdown.splitlines()
    commands = []
    for i, line in enumerate(lines):
        if not line.startswith(DOCTEST):
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```sh"):
            raise ValueError(f"line {i + 1}: {DOCTEST} is not followed by a ```sh block")
        for number in range(i + 2, len(lines)):
            command = lines[number]
            if command.startswith("```"):
                break
            if command.strip() and not command.lstrip().startswith("#"):
                expected = EXIT.search(command)
                commands.append((number + 1, command, int(expected.group(1)) if expected else 0))
        else:
            raise ValueError(f"line {i + 2}: the marked block is not closed")
    return commands


def documents():
    """README.md and every page under docs/, by their path relative to the repository."""
    return [README, *sorted((REPO / "docs").glob("*.md"))]
