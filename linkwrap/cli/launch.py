"""`linkwrap launch -- <driver> <args...>`: the CMake / ninja link launcher."""


def run_verbatim(argv) -> int:
    if argv[:1] in (["-h"], ["--help"]) or argv[:2] in (["--", "-h"], ["--", "--help"]):
        import sys
        from linkwrap.cli.main import verbatim_help
        sys.stdout.write(verbatim_help("launch"))
        return 0
    from linkwrap.cc import interruptible, interrupted
    from linkwrap.request.invocation import launch_usage
    usage = launch_usage(argv, "linkwrap launch")
    if usage is not None:
        return usage
    argv = argv[1:] if argv[:1] == ["--"] else argv
    interruptible()
    from linkwrap.pipeline import main as link
    interrupted()
    return link(argv[1:], driver=argv[0])
