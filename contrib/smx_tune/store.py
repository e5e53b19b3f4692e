# SPDX-License-Identifier: BSD-3-Clause
"""The sweep's output directory: what lets an interrupted sweep resume.

    state.json   the plan (settings, classes and their CPU pairs, mechanisms) fixed at the
                 first start; a later start with other settings is refused
    runs.csv     one row per size of every measuring job, tagged with the job's id
    units.csv    one row per finished job (class, protocol, repetition, id, seconds)

A job's rows count only once units.csv names it: rows of a job cut short (interrupt,
crash, budget) are ignored, so resuming measures that job again and nothing twice.
"""
import csv
import json
import os

RUN_FIELDS = ["run_id", "class", "protocol", "rep", "bytes", "iters", "usec", "mbps"]
UNIT_FIELDS = ["run_id", "class", "protocol", "rep", "seconds", "finished"]
STATE_VERSION = 1


class StoreError(Exception):
    pass


class Store:
    def __init__(self, out_dir):
        self.dir = out_dir
        self.state_path = os.path.join(out_dir, "state.json")
        self.runs_path = os.path.join(out_dir, "runs.csv")
        self.units_path = os.path.join(out_dir, "units.csv")

    def path(self, name):
        return os.path.join(self.dir, name)

    def load_state(self):
        if not os.path.exists(self.state_path):
            return None
        try:
            with open(self.state_path) as f:
                state = json.load(f)
        except (OSError, ValueError) as e:
            raise StoreError("%s is unreadable (%s): use another --out" % (self.state_path, e))
        if state.get("version") != STATE_VERSION:
            raise StoreError("%s was written by another version of smx-tune: use another "
                             "--out" % self.state_path)
        return state

    def save_state(self, state):
        os.makedirs(self.dir, exist_ok=True)
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(state, version=STATE_VERSION), f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, self.state_path)

    def units(self):
        """Finished jobs: {(class, protocol, rep): unit row}."""
        done = {}
        for rec in _read(self.units_path):
            done[(rec["class"], rec["protocol"], int(rec["rep"]))] = rec
        return done

    def rows(self):
        """Measurements of finished jobs only."""
        ids = {u["run_id"] for u in self.units().values()}
        return [r for r in _read(self.runs_path) if r["run_id"] in ids]

    def add(self, run_id, cls, protocol, rep, rows, seconds, finished):
        """Record one finished job: its rows first, then the line that makes them count."""
        _append(self.runs_path, RUN_FIELDS,
                [dict(r, run_id=run_id, protocol=protocol, rep=rep, **{"class": cls})
                 for r in rows])
        _append(self.units_path, UNIT_FIELDS,
                [{"run_id": run_id, "class": cls, "protocol": protocol, "rep": rep,
                  "seconds": "%.2f" % seconds, "finished": finished}])


def _read(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _append(path, fields, records):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    if not new:  # a line cut short by a crash must not swallow the next record
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            cut = f.read(1) != b"\n"
        if cut:
            with open(path, "a") as f:
                f.write("\n")
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
        if new:
            w.writeheader()
        w.writerows(records)
        f.flush()
        os.fsync(f.fileno())
