# SPDX-License-Identifier: BSD-3-Clause
"""smx-tune: per-class single-copy thresholds for btl/smx, measured on the node.

topology   hwloc classes and a pair of CPUs per class
runner     mpirun with a bound pair; probes; one measuring job of tests/bench/smx_bench
store      the output directory that makes a sweep resumable
analysis   medians, crossovers, the mechanism to use
paramfile  the tuned parameter file (mpirun --tune, openmpi-mca-params.conf)
plots      the figures (matplotlib)
cli        the command line: sweep and compare
"""
