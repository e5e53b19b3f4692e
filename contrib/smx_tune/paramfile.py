# SPDX-License-Identifier: BSD-3-Clause
"""The tuned parameter file: one 'name=value' per line, '#' comments.

That form is read by both of Open MPI 5's readers: mpirun --tune FILE (PRRTE takes a bare
name=value token as an MCA parameter) and the openmpi-mca-params.conf parser (also used
for OMPI_MCA_mca_base_param_files and OMPI_MCA_mca_base_envar_file_prefix). The spaced
'name = value' form is refused by mpirun --tune, and '--mca name value' by the .conf
parser, so neither is written.

The file pins btl_smx_single_copy_min_<class> (btl/smx otherwise measures, per peer and
size, which way a rendezvous takes); it leaves the eager limits to btl/smx's measurement.
"""
import re

from . import analysis

_LINE = re.compile(r"^([A-Za-z0-9_]+)=(\S+)$")


def read_values(path):
    """{name: value} of the parameter lines; comments and blank lines skipped.
    Raises ValueError naming the first line in neither form."""
    with open(path) as f:
        return dict(parameter_lines(f.read(), path))


def parameter_lines(text, source):
    """[(name, value)] of the parameter lines of a file's text, in order. Raises ValueError
    naming the first line in neither form."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _LINE.match(stripped)
        if not m:
            raise ValueError("%s:%d: not a 'name=value' line: %r" % (source, n, stripped))
        found.append((m.group(1), m.group(2)))
    return found


def render(info, result):
    """The file's text. info: machine/run facts (dict); result: analysis.tune()'s tuple."""
    mech, scores, chosen, per_mech, med, note = result
    out = ["# Open MPI MCA parameters for btl/smx, measured on this node by contrib/smx-tune.",
           "#",
           "# Use: mpirun --tune THIS_FILE --mca btl smx,self ...",
           "#   or append the parameter lines to <prefix>/etc/openmpi-mca-params.conf",
           "#   (or ~/.openmpi/mca-params.conf). btl/smx runs only where selected",
           "#   (--mca btl smx,self): its exclusivity is below btl/sm's.",
           "#",
           "# Each btl_smx_single_copy_min_<class> line below pins the way of that class's",
           "# rendezvous (single copy from that size, double copy below it or never); a",
           "# class without one stays auto: btl/smx measures it per peer and size. Eager",
           "# limits stay auto. The sweep pinned the eager limit (in each class's line below)",
           "# so that every size above it went by rendezvous.",
           "#",
           "# machine:    %s" % info["machine"],
           "# topology:   %s" % info["topology"],
           "# date:       %s" % info["date"],
           "# Open MPI:   %s" % info["ompi"],
           "# benchmark:  %s" % info["bench"],
           "# repeated:   %s" % info["reps"],
           "# mechanisms: %s" % info["mechanisms"]]
    if scores:
        out.append("#   single-copy time / double-copy time above the eager limits "
                   "(geometric mean): " + ", ".join("%s %.2f" % (m, s)
                                                    for m, s in sorted(scores.items())))
    if note:
        out.append("# mechanism:  " + note)
    out.append("#")
    for cls, pair in info["pairs"].items():
        eager = info["eager_limits"][cls]
        out.append("# class %s: CPUs %d and %d, measured by rendezvous above %d bytes (the "
                   "sweep's btl_smx_eager_limit)" % (cls, pair[0], pair[1], eager))
        dec = chosen.get(cls)
        dbl = med.get((cls, analysis.DOUBLE), {})
        sgl = med.get((cls, mech), {}) if mech else {}
        if dbl or sgl:
            out.append("#   %8s %12s %12s %9s %5s" % ("bytes", "double us",
                                                    "%s us" % (mech or "single"),
                                                    "speedup", "runs"))
            for size in sorted(set(dbl) | set(sgl)):
                d, s = dbl.get(size), sgl.get(size)
                out.append("#   %8s %12s %12s %9s %5s" % (
                    analysis.human(size), "%.2f" % d.usec if d else "-",
                    "%.2f" % s.usec if s else "-",
                    "%.2fx" % (d.usec / s.usec) if d and s and s.usec > 0 else "-",
                    "%d/%d" % (d.n if d else 0, s.n if s else 0)))
        if dec is None and mech is None and note:
            out.append("#   no mechanism chosen (see above): btl_smx_single_copy_min_%s left "
                       "auto (measured by btl/smx)" % cls)
        elif dec is None:
            out.append("#   no %s measurements: btl_smx_single_copy_min_%s left auto "
                       "(measured by btl/smx)" % ("single-copy" if dbl else "complete", cls))
        elif dec.threshold is None:
            out.append("#   " + dec.reason)
        else:
            out.append("#   -> %s" % dec.reason)
            out.append("btl_smx_single_copy_min_%s=%s"
                       % (cls, "never" if dec.threshold == 0 else dec.threshold))
        for m, decs in sorted(per_mech.items()):
            if m != mech and cls in decs and decs[cls].threshold is not None:
                out.append("#   (with %s instead: %s)" % (m, decs[cls].reason))
        out.append("#")
    if info["absent"]:
        out.append("# not on this machine (left auto): " + ", ".join(info["absent"]))
    if mech and info["available"] > 1:
        out.append("# the thresholds above were measured with %s: select it" % mech)
        out.append("smsc=%s" % mech)
    elif mech:
        out.append("# single copy: %s, the only mechanism available, selected by default"
                   % mech)
    return "\n".join(out) + "\n"
