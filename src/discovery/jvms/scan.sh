# jdwpmux: find JVMs with a JDWP agent from /proc. Plain POSIX sh (dash, busybox ash,
# bash); it reads /proc and prints what it read, nothing else: jdwpmux makes sense of it.
# Each record is "@TAG ARG", a newline, the bytes read, a newline and "@@NONCE".
# Commands, one line each: jdwpmux_scan NONCE, then jdwpmux_proc / _fd / _threads / _net
# NONCE PID..., each round closed by jdwpmux_done NONCE.
exec 2>/dev/null
jdwpmux_rec() { printf '@%s %s\n' "$1" "$2"; }
jdwpmux_end() { printf '\n@@%s\n' "$jdwpmux_nonce"; }
jdwpmux_pids() { for p in "$@"; do case $p in '' | *[!0-9]*) ;; *) [ -d "/proc/$p" ] && echo "$p" ;; esac; done; }
jdwpmux_scan() {
  jdwpmux_nonce=$1
  jdwpmux_rec id -; id -u; jdwpmux_end
  jdwpmux_rec tcp -; cat /proc/net/tcp /proc/net/tcp6; jdwpmux_end
  # The brackets keep grep's own command line from matching its pattern.
  if command -v grep >/dev/null; then
    jdwpmux_f=$(grep -l -e 'jdw[p]' /proc/[0-9]*/cmdline; grep -l -e 'JAVA_TOOL_OPTION[S]' -e 'JDK_JAVA_OPTION[S]' /proc/[0-9]*/environ)
  else
    jdwpmux_f=$(for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do
      case $(cat "$f") in *jdwp* | *JAVA_TOOL_OPTIONS* | *JDK_JAVA_OPTIONS*) echo "$f" ;; esac
    done)
  fi
  set --
  for f in $jdwpmux_f; do
    p=${f#/proc/}; p=${p%%/*}
    case " $* " in *" /proc/$p/ns/net "*) ;; *) set -- "$@" "/proc/$p/ns/net" "/proc/$p/ns/pid" ;; esac
  done
  jdwpmux_rec ns -; ls -l /proc/self/ns/net /proc/self/ns/pid "$@"; jdwpmux_end
}
# What names a pod or a network namespace on this host, once per proc request (asked only
# when a process is new): lines "pods/NS_POD_UID", "containers/POD_NS_CONTAINER-ID.log";
# "INODE /run/netns/NAME".
jdwpmux_places() {
  jdwpmux_rec pods -; for d in /var/log/pods/* /var/log/containers/*; do echo "${d#/var/log/}"; done; jdwpmux_end
  jdwpmux_rec netns -; ls -iLd /run/netns/*; jdwpmux_end
}
# Up to 4 ancestors' command lines ("parent" records, the parent's first), up to init.
jdwpmux_parents() {
  a=$1; i=0
  while [ "$i" -lt 4 ]; do
    q=
    while read -r k v rest; do [ "$k" = "PPid:" ] && { q=$v; break; }; done < "/proc/$a/status"
    case $q in '' | 0 | 1 | *[!0-9]*) break ;; esac
    jdwpmux_rec parent "$1"; cat "/proc/$q/cmdline"; jdwpmux_end
    a=$q; i=$((i + 1))
  done
}
# The config of the Docker container the process's cgroup names (.../docker-ID.scope or
# .../docker/ID, ID 64 lowercase hex digits), read for no other process.
jdwpmux_docker() {
  while IFS= read -r l; do
    case $l in
      */docker-*) d=${l##*/docker-}; d=${d%%/*}; d=${d%.scope} ;;
      */docker/*) d=${l##*/docker/}; d=${d%%/*} ;;
      *) continue ;;
    esac
    case $l in *kubepods*) continue ;; esac
    case $d in *[!0-9a-f]*) continue ;; esac
    [ "${#d}" -eq 64 ] || continue
    jdwpmux_rec docker "$1"; cat "/var/lib/docker/containers/$d/config.v2.json"; jdwpmux_end
    break
  done < "/proc/$1/cgroup"
}
jdwpmux_proc() {
  jdwpmux_nonce=$1; shift
  jdwpmux_places
  for p in $(jdwpmux_pids "$@"); do
    u=
    while read -r k v rest; do [ "$k" = "Uid:" ] && { u=$v; break; }; done < "/proc/$p/status"
    n=
    [ -n "$u" ] && while IFS=: read -r a b c rest; do [ "$c" = "$u" ] && { n=$a; break; }; done < /etc/passwd
    jdwpmux_rec proc "$p"; echo "$u $n"; jdwpmux_end
    jdwpmux_rec cmdline "$p"; cat "/proc/$p/cmdline"; jdwpmux_end
    jdwpmux_rec environ "$p"
    if command -v tr >/dev/null && command -v grep >/dev/null; then
      tr '\000' '\n' < "/proc/$p/environ" | grep -e '^JAVA_TOOL_OPTIONS=' -e '^JDK_JAVA_OPTIONS=' -e '^container=' -e '^HOSTNAME='
    else
      cat "/proc/$p/environ"
    fi
    jdwpmux_end
    jdwpmux_rec cgroup "$p"; cat "/proc/$p/cgroup"; jdwpmux_end
    jdwpmux_parents "$p"
    jdwpmux_docker "$p"
  done
}
jdwpmux_fd() {
  jdwpmux_nonce=$1; shift
  for p in $(jdwpmux_pids "$@"); do jdwpmux_rec fd "$p"; ls -l "/proc/$p/fd"; jdwpmux_end; done
}
jdwpmux_threads() {
  jdwpmux_nonce=$1; shift
  for p in $(jdwpmux_pids "$@"); do jdwpmux_rec threads "$p"; cat /proc/"$p"/task/*/comm; jdwpmux_end; done
}
jdwpmux_net() {
  jdwpmux_nonce=$1; shift
  for p in $(jdwpmux_pids "$@"); do
    jdwpmux_rec nettcp "$p"; cat "/proc/$p/net/tcp" "/proc/$p/net/tcp6"; jdwpmux_end
    jdwpmux_rec fib "$p"; cat "/proc/$p/net/fib_trie"; jdwpmux_end
  done
}
jdwpmux_done() { jdwpmux_nonce=$1; jdwpmux_rec done -; jdwpmux_end; }
jdwpmux_done ready
