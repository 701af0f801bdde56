#!/usr/bin/env bash
# Measures C-8's sweep (issue 27, decision 0042) on the local AWS emulator: N pending
# proposals of one tenant prepared under old settings, then the settings saved; prints each
# sweep pass's time (a pass stops at its 15 s budget and reports what it left, the next one
# finishes) and checks that every old proposal ends cancelled. Not part of the test command
# at large N (the test command runs the same test with N=48).
#
#   infra/scripts/measure-sweep.sh [N]      # default 1000
#
# moto answers one request at a time (about 150 a second here, through our launcher,
# which also spares it a whole-table copy per transaction and a whole-table sort per
# Query), so its times are an upper bound far above DynamoDB's 10–25 ms per transaction;
# at 10,000 it cannot even return the registrations within a pass's 10 s read limit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
n=${1:-1000}
export PATH="$root/.venv/tools/bin:$PATH"
# `cargo test`, not nextest: the test command's nextest profile stops a test after 5
# minutes, and a large N takes longer on the emulator.
COUNTERSIGN_SWEEP_SCALE="$n" infra/scripts/with-local-aws.sh \
  cargo test -p countersign-aws --test aws -- --nocapture --exact \
  sweep::c8_a_save_over_many_registrations_leaves_no_old_proposal_confirmable 2>&1 |
  grep -E "C-8 sweep of|test result|panicked"
