#!/usr/bin/env bash
# The simulation bites: each patch in internal/testing/sim/testdata/af8485c puts
# one decision rule of af8485c back (issue 32, findings 1-6), each in
# internal/testing/sim/testdata/later one found since (the e2e, a review, a
# longer simulation run), and the simulation must break the invariant named
# below on each recorded seed.
# Runs on a copy of the tree as it is (tracked files); the tree is not
# touched. Prints one line per finding; fails if any rule goes unnoticed.
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$tmp" 2>/dev/null || true
cd "$tmp"
declare -A invariant=(
  [1]="no healthy node with carrier stays out of the election"
  [2]="a killed daemon whose apiserver stayed healthy leaves no gap"
  [3]="a carrier flap costs the flap, not a master-down interval"
  [4]="a healthy node never takes part with the fail-open priority"
  [5]="a fault in the check never keeps the VIP down"
  [6]="a fault that takes nothing from the holder moves nothing (netlink-fails)"
  [announce-unbound]="a node announces only a VIP it holds"
  [freeze-pingpong]="a holder frozen past the backups' wait steps back when it runs again"
  [restart-wait]="a killed daemon restarted within the backups' wait keeps the VIP"
  [unsettled-taker]="a node takes the VIP from a live master only once settled"
  [lifetime]="no VIP outlives its daemon"
  [resume-listen]="a restarted node never takes the VIP from a live master"
  [wire-recovers]="a stranger's address is never bound"
  [in-doubt]="a node that saw its apiserver die takes the VIP from no advertising master"
  [no-master-yet]="a node that saw its apiserver die takes the VIP from no advertising master"
  [two-resigned]="never two holders"
  [resigned-repeats]="a node that saw its apiserver die takes the VIP from no advertising master"
  [stale-claim]="a failure every node shares never leaves the VIP unheld"
)
declare -A seeds=([1]="1 13 16" [2]="15 16 25" [3]="155 180 204" [4]="2 15 17" [5]="366 950 1270" [6]="25 31 41"
  [announce-unbound]="1 2 3" [freeze-pingpong]="7 120 171" [restart-wait]="107 111 140" [unsettled-taker]="21 31 36"
  [lifetime]="7 11 23" [resume-listen]="132 251 583" [wire-recovers]="39405"
  [in-doubt]="36" [no-master-yet]="11236" [two-resigned]="11114" [resigned-repeats]="7719"
  [stale-claim]="324 660 932")
missed=0
for n in 1 2 3 4 5 6 announce-unbound freeze-pingpong restart-wait unsettled-taker lifetime resume-listen wire-recovers in-doubt no-master-yet two-resigned resigned-repeats stale-claim; do
  p="internal/testing/sim/testdata/af8485c/finding$n.patch"
  [ -f "$p" ] || p="internal/testing/sim/testdata/later/$n.patch"
  patch -s -p1 < "$p"
  go test -c -o sim.test ./internal/testing/sim
  for s in ${seeds[$n]}; do
    if out=$(./sim.test -test.run '^TestSimulation$' -sim.seed "$s" 2>&1); then
      echo "finding $n: seed $s passed with af8485c's rule back: the simulation no longer finds it"; missed=1
    elif ! grep -qF "${invariant[$n]} at" <<<"$out"; then
      echo "finding $n: seed $s broke another invariant:"; grep -m1 -E '^ +seed ' <<<"$out" || true; missed=1
    fi
  done
  echo "finding $n: found on seeds ${seeds[$n]}: ${invariant[$n]}"
  patch -s -R -p1 < "$p"
done
exit $missed
