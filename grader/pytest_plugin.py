"""The pytest11 entry point (`grader = "grader.pytest_plugin"` in pyproject.toml): a stable public
path for the plugin, which lives in grader.frontends.pytest_plugin."""
from grader.frontends.pytest_plugin import *  # noqa: F401,F403  (pytest finds the hooks by name)
from grader.frontends.pytest_plugin import __all__  # noqa: F401
