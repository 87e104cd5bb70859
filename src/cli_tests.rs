//! `serve --help` in groups.

use clap::CommandFactory;

use super::*;

/// `jdwpmux serve --help` as clap prints it: (heading, option lines) in order.
fn serve_help_groups() -> Vec<(String, Vec<String>)> {
    let mut cmd = Cli::command();
    cmd.build();
    let serve = cmd.find_subcommand_mut("serve").expect("serve");
    let help = serve.render_long_help().to_string();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for line in help.lines() {
        if let Some(h) = line.strip_suffix(':').filter(|l| !l.starts_with(' ') && !l.is_empty()) {
            groups.push((h.to_string(), Vec::new()));
        } else if let (Some(g), Some(opt)) = (groups.last_mut(), line.trim_start().strip_prefix('-')) {
            // An option's first line: `  -v, --verbose...` or `      --vm <...>`, not help text.
            if line.starts_with("  ") && !line.starts_with("          ") {
                g.1.push(format!("-{opt}"));
            }
        }
    }
    groups
}

#[test]
fn serve_help_shows_every_option_in_a_named_group() {
    let groups = serve_help_groups();
    let names: Vec<&str> = groups.iter().map(|(h, _)| h.as_str()).collect();
    // clap's own group holds only --help and --version; then ours, in their order.
    assert_eq!(names[0], "Options", "{names:?}");
    let ours: Vec<&str> = names[1..].to_vec();
    assert_eq!(ours, HEADINGS, "{names:?}");
    let (_, clap_own) = &groups[0];
    assert!(clap_own.iter().all(|o| o.contains("--help") || o.contains("--version")), "{clap_own:?}");
    // Every option is in one group, and every option of serve and the global ones is shown.
    let shown: Vec<&String> = groups.iter().flat_map(|(_, o)| o).collect();
    let mut cmd = Cli::command();
    cmd.build();
    let serve = cmd.find_subcommand("serve").expect("serve");
    for a in serve.get_arguments().filter(|a| !a.is_hide_set()) {
        let Some(long) = a.get_long() else { continue };
        let lines: Vec<_> = shown.iter().filter(|l| l.split([',', ' ', '.', '[', '<']).any(|w| w == format!("--{long}"))).collect();
        assert_eq!(lines.len(), 1, "--{long} once in {groups:#?}");
        if !["help", "version"].contains(&long) {
            assert!(a.get_help_heading().is_some_and(|h| HEADINGS.contains(&h)), "--{long} has no group");
        }
    }
}

#[test]
fn options_that_belong_together_are_shown_together() {
    let groups = serve_help_groups();
    let group_of = |opt: &str| groups.iter().find(|(_, o)| o.iter().any(|l| l.contains(opt))).map(|(h, _)| h.as_str());
    assert_eq!(group_of("--scan-interval"), group_of("--scan <"));
    assert_eq!(group_of("--scan <"), Some(FINDING_VMS));
    assert_eq!(group_of("--ssh-interval"), Some(OTHER_MACHINES));
    assert_eq!(group_of("--current-port"), Some(PORTS));
    assert_eq!(group_of("--max-debuggers"), Some(SHARING));
    assert_eq!(group_of("--capture-snaplen"), Some(CAPTURES));
    assert_eq!(group_of("--web"), Some(PAGE));
    assert_eq!(group_of("--log-format"), Some(LOGGING));
    assert_eq!(group_of("--verbose"), Some(LOGGING));
}

/// The help of one `serve` option, as `--help` prints it (its lines joined).
fn serve_option_help(long: &str) -> String {
    let cmd = Cli::command();
    let serve = cmd.find_subcommand("serve").expect("serve");
    let arg = serve.get_arguments().find(|a| a.get_long() == Some(long)).unwrap_or_else(|| panic!("no --{long}"));
    arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default()
}

#[test]
fn flags_say_what_they_do() {
    // --no-scan: the port scan only; /proc is --no-proc's.
    let no_scan = serve_option_help("no-scan");
    assert!(no_scan.contains("probe ports") && no_scan.contains("--no-proc"), "{no_scan}");
    assert!(!serve_option_help("proc").contains("--no-scan"));
    // --adb starts a server, and says that it stays; without it none is started.
    let adb = serve_option_help("adb");
    assert!(adb.contains("start-server") && adb.contains("never started") && adb.contains("kill-server"), "{adb}");
    // --far-path says what it names, plainly.
    let far_path = serve_option_help("far-path");
    assert!(far_path.starts_with("Which jdwpmux to start on each --ssh host and in each --exec container"), "{far_path}");
}

#[test]
fn kube_takes_namespaces_with_selectors_and_a_context() {
    use clap::Parser;
    let cli = Cli::try_parse_from(["jdwpmux", "serve", "--kube", "shop:app=orders", "--kube", "billing", "--kube-context", "prod"]).unwrap();
    let Command::Serve(s) = cli.command else { panic!("serve") };
    let kube: Vec<String> = s.kube.iter().map(|k| k.to_string()).collect();
    assert_eq!(kube, ["shop:app=orders", "billing"]);
    assert_eq!(s.kube_context.as_deref(), Some("prod"));
    assert!(Cli::try_parse_from(["jdwpmux", "serve", "--kube", "Shop"]).is_err());
    assert!(Cli::try_parse_from(["jdwpmux", "serve", "--kube", "shop:"]).is_err());
    let groups = serve_help_groups();
    let group_of = |opt: &str| groups.iter().find(|(_, o)| o.iter().any(|l| l.contains(opt))).map(|(h, _)| h.as_str());
    assert_eq!(group_of("--kube <"), Some(OTHER_MACHINES));
    assert_eq!(group_of("--kube-context"), Some(OTHER_MACHINES));
}
