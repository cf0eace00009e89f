"""The facts that decide what is fast and safe, probed per link: the machine and the output
(probe), the linkers installed (linkers), the build around the link (build)."""
