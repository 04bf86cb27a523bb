"""The PEP 517 build backend of the flockd package, standard library only.

pyproject.toml names this module (`backend-path = ["_build"]`, `requires =
[]`), so `python3 -m pip install ./client/python` needs nothing from a
package index: pip imports this file and calls build_wheel (or
build_editable for `pip install -e`, build_sdist for `pip wheel`'s source
builds). The wheel holds the flockd package (its .py files and schema.json)
and the metadata below; it is pure Python (py3-none-any).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "flockd"

SUMMARY = "Client library of flockd, the authoritative flocking server: commands, snapshots, " \
          "reconnects"
REQUIRES_PYTHON = ">=3.8"
REQUIRES = ["websockets>=10"]
EXTRAS = {"numpy": ["numpy"]}


def version():
    with open(os.path.join(HERE, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def metadata():
    lines = ["Metadata-Version: 2.1", f"Name: {PACKAGE}", f"Version: {version()}",
             f"Summary: {SUMMARY}", f"Requires-Python: {REQUIRES_PYTHON}", "License: MIT"]
    lines += [f"Requires-Dist: {r}" for r in REQUIRES]
    for extra, reqs in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        return "\n".join(lines) + "\n\n" + f.read()


def package_files():
    """(path in the wheel, path on disk) of every file the package ships."""
    root = os.path.join(HERE, PACKAGE)
    for name in sorted(os.listdir(root)):
        if name.endswith((".py", ".json")):
            yield f"{PACKAGE}/{name}", os.path.join(root, name)


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write_wheel(wheel_directory, files):
    """files: (name in the wheel, bytes); the dist-info is added. Returns the name."""
    dist = f"{PACKAGE}-{version()}"
    wheel = "Wheel-Version: 1.0\nGenerator: flockd_build\nRoot-Is-Purelib: true\n" \
            "Tag: py3-none-any\n"
    files = list(files) + [(f"{dist}.dist-info/METADATA", metadata().encode()),
                           (f"{dist}.dist-info/WHEEL", wheel.encode()),
                           (f"{dist}.dist-info/top_level.txt", f"{PACKAGE}\n".encode())]
    record = "".join(f"{name},{_digest(data)},{len(data)}\n" for name, data in files)
    record += f"{dist}.dist-info/RECORD,,\n"
    name = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files + [(f"{dist}.dist-info/RECORD", record.encode())]:
            info = zipfile.ZipInfo(arc, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(arc, _read(p)) for arc, p in package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth file puts this source tree on sys.path."""
    return _write_wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{PACKAGE}-{version()}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", "_build/flockd_build.py"] + \
                [arc for arc, _ in package_files()]:
            tar.add(os.path.join(HERE, rel), arcname=f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = metadata().encode()
        info.size, info.mtime = len(data), int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return name
