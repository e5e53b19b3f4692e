# SPDX-License-Identifier: BSD-3-Clause
"""Which locality classes a node has, and a pair of CPUs for each.

The rule is btl/smx's own (opal/mca/btl/smx/btl_smx_locality.c): a pair of processes
falls in the narrowest of core/L2, L3, package, NUMA node that holds both, else "remote".
This module only proposes pairs; the sweep then asks btl/smx itself (its policy, read
through MPI_T) which class it gives each bound pair and refuses to measure when the two
disagree, so a divergence from the C rule cannot go unnoticed.
"""
import subprocess
import xml.etree.ElementTree as ET

CLASSES = ("l2", "l3", "package", "numa", "remote")

# hwloc object types that make each class, narrowest first (C: smx_locality_class()).
_CLASS_TYPES = (("l2", ("Core", "L2Cache")), ("l3", ("L3Cache",)),
                ("package", ("Package",)), ("numa", ("NUMANode",)))


class TopologyError(Exception):
    pass


def parse_bitmap(text):
    """An hwloc bitmap string ("0x00000003", "0xffffffff,0x0000000f") as a Python int."""
    words = [w.strip() for w in text.split(",")]
    value = 0
    for w in words:
        value = (value << 32) | int(w, 16)
    return value


class Topology:
    """The PUs of a machine and, per PU, the hwloc objects that hold it."""

    def __init__(self, xml_text, source):
        self.source = source
        try:
            root = ET.fromstring(xml_text)
        except ET.ParseError as e:
            raise TopologyError("%s: not an hwloc XML topology (%s)" % (source, e))
        objects = list(root.iter("object"))
        machine = next((o for o in objects if o.get("type") == "Machine"), None)
        if machine is None:
            raise TopologyError("%s: no Machine object: not an hwloc XML topology" % source)
        allowed = parse_bitmap(machine.get("allowed_cpuset", machine.get("cpuset", "0x0")))
        self.pus = sorted(int(o.get("os_index")) for o in objects if o.get("type") == "PU"
                          and allowed >> int(o.get("os_index")) & 1)
        # type -> list of cpusets (objects of one type are disjoint)
        self.sets = {}
        for o in objects:
            if o.get("cpuset"):
                self.sets.setdefault(o.get("type"), []).append(parse_bitmap(o.get("cpuset")))
        self.counts = {t: len(self.sets.get(t, ())) for t in
                       ("Package", "NUMANode", "L3Cache", "L2Cache", "Core", "PU")}

    def _inside_one(self, obj_type, both):
        return any(both & s == both for s in self.sets.get(obj_type, ()))

    def pair_class(self, a, b):
        """btl/smx's class of two processes bound to PUs a and b."""
        both = (1 << a) | (1 << b)
        for cls, types in _CLASS_TYPES:
            if any(self._inside_one(t, both) for t in types):
                return cls
        return "remote"

    def same_core(self, a, b):
        return self._inside_one("Core", (1 << a) | (1 << b))

    def pairs_by_class(self):
        """{class: (a, b)}: one pair of PUs per class the machine has. The first PU is the
        lowest one that has a peer of that class; pairs on two cores are preferred over
        two hardware threads of one core (both are class l2)."""
        found = {}
        for a in self.pus:
            for b in self.pus:
                if b <= a:
                    continue
                cls = self.pair_class(a, b)
                if cls not in found or (found[cls][2] and not self.same_core(a, b)):
                    found[cls] = (a, b, self.same_core(a, b))
        return {c: found[c][:2] for c in CLASSES if c in found}

    def describe(self):
        c = self.counts
        return ("%d PUs, %d cores, %d L2, %d L3, %d packages, %d NUMA nodes"
                % (len(self.pus), c["Core"], c["L2Cache"], c["L3Cache"], c["Package"],
                   c["NUMANode"]))


def load(xml_file=None):
    """The topology from an hwloc XML file, or this machine's (hwloc-ls --of xml)."""
    if xml_file:
        try:
            with open(xml_file) as f:
                return Topology(f.read(), xml_file)
        except OSError as e:
            raise TopologyError("cannot read topology %s: %s" % (xml_file, e.strerror))
    for tool in ("hwloc-ls", "lstopo-no-graphics"):
        try:
            out = subprocess.run([tool, "--of", "xml", "-"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, timeout=60)
        except FileNotFoundError:
            continue
        if out.returncode == 0:
            return Topology(out.stdout, "this machine (%s)" % tool)
        raise TopologyError("%s failed: %s" % (tool, out.stderr.strip()))
    raise TopologyError("hwloc-ls not found: install the Debian package hwloc")
