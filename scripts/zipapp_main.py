# -*- coding: utf-8 -*-
# The zipapp's __main__.py.  scripts/build puts it in place of shiv's two-line
# __main__ (and fills in BUILD_ID), so that it runs before shiv's bootstrap:
#  - Python older than 3.9 gets one line and exit code 11, not a traceback
#    from a dependency (or from shiv, which needs 3.8);
#  - a home directory where shiv cannot unpack gets a one-line hint;
#  - it unpacks with shiv's own function (same lock, same layout), compiles the
#    modules every run needs once per interpreter, then puts site-packages on
#    sys.path and calls the entry point itself, skipping the imports of shiv's
#    bootstrap (~30 ms on every warm start).  SHIV_* variables other than
#    SHIV_ROOT hand everything to shiv's bootstrap.
# It uses the stdlib only and syntax that every Python since 2.7 can parse:
# no f-strings, no print(..., file=...).
import os
import sys

NAME = "kubectl-gpuisolate"
BUILD_ID = "@BUILD_ID@"  # shiv's build id (the sha256 of site-packages), set by scripts/build
EXIT_PYTHON = 11  # kubectl_gpuisolate.exits.EXIT_PYTHON: the zipapp cannot start


def _stop(message):
    sys.stderr.write("error: " + message + "\n")
    sys.exit(EXIT_PYTHON)


if sys.version_info < (3, 9):
    _stop("%s needs Python >= 3.9, found %d.%d" % ((NAME,) + tuple(sys.version_info[:2])))


def _shiv_root():
    """The directory shiv unpacks into, resolved as shiv's bootstrap does."""
    root = os.environ.get("SHIV_ROOT") or ""
    if root.startswith("$"):
        root = os.environ.get(root[1:], root[1:])
    return os.path.expanduser(root or os.path.join("~", ".shiv"))


def _site_packages(root):
    # shiv names the directory after the resolved zipapp, so links share it.
    name = os.path.basename(os.path.realpath(sys.argv[0]))
    return os.path.join(root, "%s_%s" % (name, BUILD_ID), "site-packages")


def _warm_start(site_packages):
    """What shiv's bootstrap does once site-packages exists (without --preamble,
    --no-modify or -E, which the build does not use), minus its imports."""
    import site

    length = len(sys.path)
    index = next((i for i, part in enumerate(sys.path)
                  if os.path.basename(part) in ("site-packages", "dist-packages")), None) or length
    site.addsitedir(site_packages)
    sys.path = sys.path[:index] + sys.path[length:] + sys.path[index:length]
    from kubectl_gpuisolate.cli import entry_point

    entry_point()


def _check_root(root):
    try:
        os.makedirs(root, exist_ok=True)
        problem = None if os.access(root, os.W_OK | os.X_OK) else "not writable"
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem:
        _stop("%s: cannot unpack into %s (%s); set SHIV_ROOT to a writable directory, "
              "e.g. export SHIV_ROOT=/tmp/shiv-$(id -u)" % (NAME, root, problem))


def _unpack(root, site_packages):
    """shiv's own extraction: under its file lock, into a .tmp directory that is
    then moved into place, so parallel first runs do not collide."""
    _check_root(root)
    import zipfile

    import _bootstrap

    try:
        with zipfile.ZipFile(sys.argv[0]) as archive:
            _bootstrap.extract_site_packages(archive, _bootstrap.Path(site_packages).parent)
    except OSError as exc:
        _stop("%s: cannot unpack into %s (%s); set SHIV_ROOT to a writable directory "
              "with space" % (NAME, root, exc.strerror or exc))


# What --help, completion and status import.  Python writes their bytecode on
# first import; where it does not (PYTHONDONTWRITEBYTECODE, as on some CI
# machines) they are compiled here once per interpreter, so warm starts still
# read bytecode.  Compiling all ~1800 files (shiv's --compile-pyc) took 3-7 s,
# far over the first-run budget.
HOT = ("urllib3", "yaml", "tabulate", "argcomplete", "kubectl_gpuisolate")  # ours last: the marker


def _compile_hot(site_packages):
    if not sys.dont_write_bytecode:
        return
    tag = getattr(sys.implementation, "cache_tag", None)
    ours = os.path.join(site_packages, "kubectl_gpuisolate")
    if not tag or os.path.exists(os.path.join(ours, "__pycache__", "cli.%s.pyc" % tag)):
        return
    if not os.access(ours, os.W_OK):
        return  # a read-only shared unpack: nothing to do about it here
    try:
        import compileall

        for name in HOT:
            path = os.path.join(site_packages, name)
            if os.path.isdir(path):
                compileall.compile_dir(path, quiet=2)
            elif os.path.isfile(path + ".py"):
                compileall.compile_file(path + ".py", quiet=2)
    except Exception:  # bytecode is an optimisation; never fail a run over it
        pass


def _main():
    root = _shiv_root()
    site_packages = _site_packages(root)
    if [k for k in os.environ if k.startswith("SHIV_") and k != "SHIV_ROOT"]:
        import _bootstrap  # SHIV_FORCE_EXTRACT, SHIV_INTERPRETER, ...: shiv's full bootstrap

        _bootstrap.bootstrap()
        return
    if not os.path.isdir(site_packages):
        _unpack(root, site_packages)
    _compile_hot(site_packages)
    _warm_start(site_packages)


_main()
