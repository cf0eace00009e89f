"""Which project's builds `summary`, `report` and `log status` show.

The current project is the one the working directory is in (the deepest recorded
project or build directory holding it: a Cargo workspace, a CMake source or build
directory, a ninja file's directory); --all-projects shows every project's. Outside
any project, every project's builds are shown and the output says so.
"""
import os


def add_arguments(parser, *, empty=True) -> None:
    parser.add_argument("--all-projects", action="store_true",
                        help="every project's builds (default: the project the current directory is in)")
    if empty:
        parser.add_argument("--empty", action="store_true",
                            help="also list builds that linked nothing (a no-op `linkwrap run`)")


def resolve(db, args, cwd=None):
    """-> (project_dir or None for every project, sentence saying what is shown)."""
    from linkwrap.store import queries
    if getattr(args, "all_projects", False):
        return None, "every project"
    project, _ = queries.current_project(db, cwd or os.getcwd())
    if project is None:
        return None, "every project (the current directory is in none)"
    return project, f"the project in {project}"

