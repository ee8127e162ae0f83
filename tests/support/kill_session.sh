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
