# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_jdwpmux_global_optspecs
    string join \n v/verbose q/quiet log-format= control= config= h/help V/version
end

function __fish_jdwpmux_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_jdwpmux_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_jdwpmux_using_subcommand
    set -l cmd (__fish_jdwpmux_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "serve" -d 'Run the proxy: connect to VMs and listen for debuggers'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "list" -d 'List the VMs a running daemon knows: port, pid, app, VM, DDM, current, debugger, state'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "select" -d 'Choose the VM behind the current-VM port (by pid, app name, HOST:PORT, :PORT or PORT of a debugger port; HOST:PID or HOST:APP for an ssh host\'s VM). It stays the current VM, also while it is away, until another is chosen'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "decode" -d 'Print a capture file as text (one line per packet, DDM chunks decoded), as traffic figures (--stats), or as a trace for Perfetto (--trace)'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "threads" -d 'Show a DDM-aware VM\'s threads, refreshed like `top` (DDM THEN/THST)'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "heap" -d 'Show a DDM-aware VM\'s heap: a summary now (HPIF) and the heap map at the next GC'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "exit" -d 'Ask a DDM-aware VM to exit with STATUS (DDM EXIT)'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "features" -d 'List a DDM-aware VM\'s features (DDM FEAT)'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "stats" -d 'Traffic figures since the daemon started, per VM, debugger and command: count, bytes, reply latency p50/p90/p99/max; DDM chunks by type; error replies'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, elvish, powershell)'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "man" -d 'Print the man page (roff) to standard output'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "far" -d 'jdwpmux on a VM\'s host (the far side): finds the host\'s JVMs, holds their debugger connections and serves them to `serve --ssh` over a Unix socket in a private folder, so a dropped link loses no event, breakpoint or suspension up to the hold time. `serve --ssh HOST` starts it on HOST by itself; run it by hand only to look at it'
complete -c jdwpmux -n "__fish_jdwpmux_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l vm -d 'A VM\'s JDWP address, HOST:PORT (repeatable), e.g. one started with -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:8000. android:HOST:PORT says it is an Android VM (an `adb forward tcp:PORT jdwp:PID`): it gets DDM only, never a JDWP packet of the proxy\'s own, until a debugger attaches' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l scan -d 'Scan a port range for VMs, HOST:FIRST-LAST (repeatable) [default when no --vm or --scan is given: 127.0.0.1:8000-8040]' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l scan-interval -d 'Seconds between scans' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l proc-match -d 'Only JVMs found in /proc whose command line contains TEXT (repeatable: any of them)' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l adb -d 'Find VMs on the devices of an adb server, and start that server (`adb start-server`) if none answers and adb is on PATH; it keeps running after jdwpmux ends, as adb\'s server does (`adb kill-server` stops it) [default: 127.0.0.1:5037]. Without --adb, and when no --vm or --scan is given, the server at 127.0.0.1:5037 (ANDROID_ADB_SERVER_PORT) is followed if one runs, and never started' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l ddm -d 'When to probe VMs with DDM: auto (Android VMs only), always, never' -r -f -a "auto\t'Only VMs that say they are Android (Dalvik/ART) or were reached through adb'
always\t'Every VM. HotSpot may crash on a DDM packet: use with care'
never\t'No DDM at all: a plain debugger proxy'"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l ssh -d 'Find and serve the JVMs of another host through ssh, as `ssh DEST` would reach it (a name from ~/.ssh/config, or USER@HOST; repeatable). Keys, ssh-agent and known_hosts work as for any ssh; jdwpmux never prompts. Nothing is installed on the host and no JDWP port is opened on a network address' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l ssh-config -d 'The ssh config file for --ssh hosts (ssh -F) [default: ssh\'s own, ~/.ssh/config]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l ssh-interval -d 'Seconds between scans of each ssh host' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l ssh-keepalive -d 'Seconds of silence on an ssh link before ssh checks it (ServerAliveInterval; the link counts as lost after three unanswered checks)' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l far -d 'When to use jdwpmux on an --ssh host (`jdwpmux far`, started through the ssh link): it holds the VM connections there, so a dropped link loses no event, breakpoint or suspension. auto: when a compatible jdwpmux is there, else ssh forwards with one line saying why; always: only through it; never: ssh forwards' -r -f -a "never\t'Never: VMs are reached through ssh forwards'
auto\t'When a compatible jdwpmux runs on the host; else through ssh forwards'
always\t'Always: a host without a usable jdwpmux is retried, never reached another way'"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l far-path -d 'Which jdwpmux to start on each --ssh host and in each --exec container (`jdwpmux far`): a name found on that host\'s PATH, or a path there' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l far-hold -d 'Seconds jdwpmux on a host holds its VM connections while the link is cut (1 to 86400): the VMs see nothing and the debuggers wait. Past it, each VM sees its debugger leave, as when it quits, and the far side ends' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l exec -d 'Serve the JVMs of a container or pod through its runtime\'s exec, where no login on its host is given: COMMAND (split as a shell would), with `jdwpmux far --attach` appended, must give a byte pipe into it, e.g. orders=\'kubectl exec -i -n shop orders-5f7c -c app --\' or billing=\'podman exec -i billing-api\' (repeatable). jdwpmux runs in the container (its own, --far-path, or this one copied in with --far-copy); NAME is the host its rows carry' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l kube -d 'Serve the JVMs of the pods of a Kubernetes namespace that match a label selector (kubectl\'s -l), e.g. shop:app=orders, or every pod of billing (repeatable): followed through this user\'s own kubectl (KUBECONFIG, contexts and auth plugins as set), each running container reached as --exec reaches one (`kubectl exec -i`). A rollout\'s new pod takes the debugger port of the pod it replaces' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l kube-context -d 'The kubeconfig context --kube uses (kubectl --context); its current context by default' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l listen -d 'Address the debugger ports listen on' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l allow -d 'Only peers in CIDR may connect to debugger ports (repeatable), like the JDWP agent\'s allow= option. Refused peers get one log line each' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l allow-user -d 'Let debuggers of local user USER (a name or a uid) connect too (repeatable); `any` lets every local user in. Without it a debugger connecting from this machine must run as the daemon\'s own user (its socket\'s owner is asked of the kernel): JDWP lets whoever connects run code as the VM\'s user. Refused users get one log line each' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l base-port -d 'First per-VM debugger port: VM k listens on BASE + k (0: ephemeral ports)' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l current-port -d 'Port that leads to the current VM (0: an ephemeral port)' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l select -d 'The current VM at start: pid, app name, HOST:PORT, or :PORT of a debugger port (a bare number that is no pid is one too)' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l max-debuggers -d 'Debuggers that may attach to one VM at once (an IDE, jdb and a script, say); each sees its own events and suspensions. 1 refuses a second debugger, as a JDWP agent does. Past the limit a debugger is refused with a log line' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l near-cache -d 'When jdwpmux answers class, method and VM data that never changes (signatures, fields, methods, line and variable tables, IDSizes, Version, capabilities) from what the VM said before on the same connection, for any of its debuggers, without a round trip. Dropped on RedefineClasses, class unloading and a new VM connection. auto: VMs reached through ssh; always: every VM; never: every command goes to the VM' -r -f -a "auto\t'For VMs reached through ssh (jdwpmux on the host or ssh forwards), where each round trip costs the link\'s delay'
always\t'For every VM, local ones too'
never\t'Never: every command goes to the VM'"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l stall-timeout -d 'Seconds a debugger may leave the VM\'s packets unread (or stop halfway through a large command) before it is cut off with a log line; meanwhile it holds up its VM\'s other debuggers. 1 to 600' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l capture -d 'Capture every packet on every leg to FILE (.pcapng for Wireshark, .jsonl for JSON lines). Read it with: tshark -r FILE -d tcp.port==8700,jdwp  (or jdwpmux decode FILE)' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l capture-format -d 'Capture format, when the file name does not say: pcapng or jsonl' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l capture-max-bytes -d 'Stop capturing (with one log line) before the file would exceed this many bytes' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l capture-snaplen -d 'Bytes kept of each packet in the capture; the rest is counted, not stored' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l web -d 'Serve the live monitor page (VMs, debuggers, threads, heap, traffic) and its JSON API on ADDR [default without ADDR: 127.0.0.1:8699]. The log prints the address to open, with a token; a non-loopback ADDR needs --allow-remote' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l spin-us -d 'Microseconds the daemon keeps polling for an answer after it wrote to a VM or a debugger, before it sleeps (0 to 1000; 0: sleep at once). Measured on a 2-CPU virtual machine, 50 brings a HotSpot round trip near a direct connection\'s, at about 1.4 times the daemon\'s CPU per round trip. Spins only while packets flow' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l no-scan -d 'Do not probe ports for VMs (the default range 127.0.0.1:8000-8040). The JVMs of this machine are still found by their process (--no-proc turns that off)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l no-proc -d 'Do not look for JVMs in /proc [on by default when no --vm, --scan or --adb is given: every local JVM with a listening JDWP agent, on any port, found by its process]'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l proc -d 'Find local JVMs in /proc even when --vm, --scan or --adb is given'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l other-users -d 'Also take other users\' JVMs: those /proc shows running as another user than jdwpmux (its effective uid), ports of this machine a scan finds listening as another user, and on --ssh hosts JVMs of other users than the ssh login. By default they are left alone, by a root daemon too, so that their owners\' own debuggers can attach (a HotSpot agent takes one debugger at a time). A --vm address is always connected to'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l podman-sudo -d 'Reach the JVMs of root\'s Podman containers, which this user cannot enter, through `sudo -n podman exec -i CONTAINER` (as through `docker exec` for a member of the docker group): only when sudo lets this user run podman without a password; what is copied in follows --far-copy. Without it such a JVM is listed with how to reach it'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l no-adb -d 'Do not use an adb server'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l far-copy -d 'When a host has no jdwpmux --far can use, copy this one there (after checking the host\'s OS, architecture and glibc), into ~/.cache/jdwpmux/VERSION/ on the host, where later starts of this same build find it: a copy there is used only when its size and CRC (the host\'s cksum, else busybox crc32) are this binary\'s; another build of the version is copied over, and one the host cannot sum is copied again. Without it nothing is ever copied'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l far-take-over -d 'When jdwpmux on a host serves another serve of the same login (another terminal or person), take it over: that serve\'s VM connections there are closed with their debuggers, it is told in one line and waits. Without it this serve waits instead'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l allow-remote -d 'Allow a non-loopback --listen address (an open JDWP port is remote code execution)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l no-web -d 'Do not serve the monitor page (when the config file turns it on)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l cpu-pin -d 'Keep the daemon\'s thread on the CPU it runs on while it relays requests one at a time, unless something else keeps that CPU busy (then it moves, and tries again after a back-off). On a 2-CPU virtual machine that cut the daemon\'s CPU per HotSpot round trip by about a fifth, and its latency too. Off by default: a background process that sets its own CPU affinity is a surprise on a machine shared with other work'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -l no-cpu-pin -d 'No CPU pinning: the default now, kept so that command lines that said it still run'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand serve" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -l json -d 'Print a JSON array instead of a table'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -l hosts -d 'Print the --ssh hosts (link state, JVM count, last scan) instead of the VMs; a plain list shows them under the VMs'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand list" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand select" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand select" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand select" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand select" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand select" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand select" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand select" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -l trace -d 'Write the capture as a Chrome trace event file (open it in ui.perfetto.dev): a track per debugger, each request a slice from command to reply' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -l json -d 'Print JSON instead of text (JSON lines; with --stats one JSON document)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -l stats -d 'Print traffic figures instead of the packets: per debugger and command the count, bytes and reply latency (p50/p90/p99/max), sorted by total time; DDM chunks by type; error replies by name'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand decode" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -l interval -d 'Milliseconds between updates' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -l once -d 'Print one snapshot and exit'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand threads" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -l png -d 'Draw the heap map to FILE as a PNG picture with a legend' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -l timeout -d 'Seconds to wait for the next GC' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -l native -d 'The native heap (NHSG) instead of the VM heap (HPSG)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -l gc -d 'Ask the VM for a GC first, so the map comes at once'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -l summary -d 'Only the summary; do not wait for a GC\'s heap map'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand heap" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand exit" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand exit" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand exit" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand exit" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand exit" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand exit" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand exit" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand features" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand features" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand features" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand features" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand features" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand features" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand features" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand stats" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand stats" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand stats" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand stats" -l json -d 'Print JSON instead of text tables'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand stats" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand stats" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand stats" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand stats" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand completions" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand completions" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand completions" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand completions" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand completions" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand completions" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand completions" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand man" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand man" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand man" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand man" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand man" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand man" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand man" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l dir -d 'The private folder for the socket, the pid file and the log [default: $XDG_RUNTIME_DIR/jdwpmux-far, else /tmp/jdwpmux-far-UID]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l hold -d 'Seconds the VM connections are held with no near side, when the near side asks for no other hold (`serve --far-hold` asks for one); also how long a far side nobody connects to waits before it ends' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l scan-interval -d 'Seconds between /proc scans' -r
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l log-format -d 'Log line format' -r -f -a "text\t''
json\t''"
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l control -d 'The daemon\'s control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this user\'s daemon in both, and in /run/user/UID/jdwpmux]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l config -d 'A TOML config file with `serve` settings, keys named like the long flags [default: $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present]' -r -F
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l detach -d 'Start in the background (a session of its own, the log in the folder), print the ready line and return'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l beside -d 'Use a folder of this protocol\'s inside the private folder: a far side of another protocol holds the folder itself (`serve --ssh` asks for this when it finds one)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -l attach -d 'Start it in the background as --detach does (or find it running), print the ready line, then carry bytes between this process\'s stdin and stdout and its socket: what `serve --exec` runs in a container through its runtime\'s exec'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -s v -l verbose -d 'More log output (-v debug, -vv trace); RUST_LOG overrides'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -s q -l quiet -d 'Only warnings and errors'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -s h -l help -d 'Print help'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand far" -s V -l version -d 'Print version'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "serve" -d 'Run the proxy: connect to VMs and listen for debuggers'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "list" -d 'List the VMs a running daemon knows: port, pid, app, VM, DDM, current, debugger, state'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "select" -d 'Choose the VM behind the current-VM port (by pid, app name, HOST:PORT, :PORT or PORT of a debugger port; HOST:PID or HOST:APP for an ssh host\'s VM). It stays the current VM, also while it is away, until another is chosen'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "decode" -d 'Print a capture file as text (one line per packet, DDM chunks decoded), as traffic figures (--stats), or as a trace for Perfetto (--trace)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "threads" -d 'Show a DDM-aware VM\'s threads, refreshed like `top` (DDM THEN/THST)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "heap" -d 'Show a DDM-aware VM\'s heap: a summary now (HPIF) and the heap map at the next GC'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "exit" -d 'Ask a DDM-aware VM to exit with STATUS (DDM EXIT)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "features" -d 'List a DDM-aware VM\'s features (DDM FEAT)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "stats" -d 'Traffic figures since the daemon started, per VM, debugger and command: count, bytes, reply latency p50/p90/p99/max; DDM chunks by type; error replies'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, elvish, powershell)'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "man" -d 'Print the man page (roff) to standard output'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "far" -d 'jdwpmux on a VM\'s host (the far side): finds the host\'s JVMs, holds their debugger connections and serves them to `serve --ssh` over a Unix socket in a private folder, so a dropped link loses no event, breakpoint or suspension up to the hold time. `serve --ssh HOST` starts it on HOST by itself; run it by hand only to look at it'
complete -c jdwpmux -n "__fish_jdwpmux_using_subcommand help; and not __fish_seen_subcommand_from serve list select decode threads heap exit features stats completions man far help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
