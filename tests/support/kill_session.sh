# Killing a whole MPI job at once, for the kill-and-resume tests (sourced).
# mpirun runs in a session of its own (setsid); OpenMPI gives each rank a process group of its
# own, so the session is what holds the whole job.

# The processes of session $1.
session_pids() {
  local f stat rest
  for f in /proc/[0-9]*/stat; do
    { stat=$(<"$f"); } 2>/dev/null || continue
    rest=${stat##*) }
    read -r _ _ _ sid _ <<<"$rest"
    [ "$sid" = "$1" ] && echo "${f//[^0-9]/}"
  done
  return 0
}

# SIGKILL to session $1 (mpirun and every rank) at once; waits until nothing of it lives on, nor
# is left unreaped (a dead run's files are told by its pid). Returns 1 if processes live on.
kill_session() {
  kill -KILL $(session_pids "$1") 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  for _ in $(seq 100); do
    [ -n "$(session_pids "$1")" ] || break
    sleep 0.1
  done
  [ -z "$(session_pids "$1")" ]
}

# wait_for_marker MARKER PID LOG WHAT [TENTHS]: waits until the held run (mpirun's pid PID)
# wrote MARKER, its point reached; if it ends first, or after TENTHS tenths of a second (1200),
# prints its LOG and fails with WHAT (the sourcing script's fail()).
wait_for_marker() {
  local marker=$1 pid=$2 log=$3 what=$4 limit=${5:-1200} waited=0
  until [ -e "$marker" ]; do
    sleep 0.1
    waited=$((waited + 1))
    if [ $waited -gt "$limit" ] || ! kill -0 "$pid" 2>/dev/null; then
      cat "$log" >&2
      fail "$what"
    fi
  done
}
