"""The Kubernetes versions the sandbox can run, and which one a run uses.

Each minor has its own module pins in tests/sandbox/k8s/vMINOR/go.mod (written by
tests/sandbox/k8s/pin); 1.33 is the default because the seed cluster runs v1.33.5.
"""
import os
from pathlib import Path

PINS = Path(__file__).resolve().parents[1] / "k8s"
DEFAULT = "1.33"


def available():
    """The minors that have pins, oldest first: ["1.31", "1.33", "1.37"]."""
    found = [p.name[1:] for p in PINS.glob("v*") if (p / "go.mod").is_file()]
    return sorted(found, key=lambda m: tuple(int(x) for x in m.split(".")))


def normalise(minor):
    return (minor or "").strip().lstrip("v")


def wanted(flag=None):
    """The minor a run asks for: the flag, else $SANDBOX_K8S_VERSION, else the default."""
    return normalise(flag) or normalise(os.environ.get("SANDBOX_K8S_VERSION")) or DEFAULT


def full(minor):
    """The pinned release of a minor, e.g. "v1.33.5", read from its go.mod."""
    for line in (PINS / f"v{minor}" / "go.mod").read_text().splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("k8s.io/kubernetes", "require") and "k8s.io/kubernetes" in words:
            return words[words.index("k8s.io/kubernetes") + 1]
    raise ValueError(f"tests/sandbox/k8s/v{minor}/go.mod pins no k8s.io/kubernetes")
