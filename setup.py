"""The wheel's build step that pyproject.toml cannot say: the site's templates/ and static/, which stay
at the top of the clone (docs/architecture.md), are copied into the package as contextviewer/_templates
and contextviewer/_static, where an installed copy's settings find them (contextviewer/settings.py).
An editable install (bin/setup) copies nothing: the clone serves them where they are.
Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SITE_FILES = {"templates": "_templates", "static": "_static"}


class BuildWithSiteFiles(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for folder, name in SITE_FILES.items():
            source = ROOT / folder
            if not source.is_dir():
                raise SystemExit(f"{source} is missing: a wheel without it would serve no pages")
            self.copy_tree(str(source), str(Path(self.build_lib) / "contextviewer" / name))


setup(cmdclass={"build_py": BuildWithSiteFiles})
