//! What a command run through a runtime's exec ended with, and what that means: whether the
//! runtime found no such program, and the words to show when it failed. Runtimes say it each
//! their own way, on either stream:
//! - Docker Engine 20.10: exit 126, `OCI runtime exec failed: ... executable file not found in
//!   $PATH: unknown` on **stdout**, nothing on stderr;
//! - Podman 4.3: exit 127, its message on stderr;
//! - kubectl: the command's own exit code passed through (`command terminated with exit code
//!   N` on stderr), and a missing program as the runtime's message on stderr.
//!
//! Pure: the streams' last lines come in, a judgement goes out.

use super::tail::Tail;

/// The OCI runtimes' (runc's, crun's) words for a program that is not in the image, which
/// every runtime above passes on, whatever exit code it gives with them.
const OCI_NOT_FOUND: &str = "executable file not found";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// None: ended by a signal.
    pub code: Option<i32>,
    /// All of stdout (bounded by the caller): the command's answer.
    pub stdout: String,
    /// The last lines of stderr, shown safe; None when it printed nothing.
    pub said: Option<String>,
    /// The last lines of stdout, shown safe; None when it printed nothing.
    pub said_out: Option<String>,
}

impl Answer {
    pub fn new(code: Option<i32>, stdout: &[u8], stderr: &[u8]) -> Answer {
        let tail = |bytes: &[u8]| {
            let mut t = Tail::default();
            t.push(bytes);
            t.said()
        };
        Answer { code, stdout: String::from_utf8_lossy(stdout).into_owned(), said: tail(stderr), said_out: tail(stdout) }
    }

    /// The runtime found no such program in the container: 127 (Podman, a shell); 126 with
    /// "not found" or "no such file" on either stream (Docker 20.10 says it on stdout); or
    /// any failure with the OCI runtime's "executable file not found" (kubectl's own codes).
    /// A program that is there but cannot be run (126, "permission denied") is not this.
    pub fn not_found(&self) -> bool {
        let words = format!("{} {}", self.said.as_deref().unwrap_or(""), self.said_out.as_deref().unwrap_or("")).to_ascii_lowercase();
        match self.code {
            Some(0) | None => false,
            Some(127) => true,
            Some(126) => words.contains("not found") || words.contains("no such file"),
            Some(_) => words.contains(OCI_NOT_FOUND),
        }
    }

    /// What it said when it failed: its stderr, else its stdout (Docker's exec errors), else
    /// that it said nothing.
    pub fn words(&self) -> &str {
        self.said.as_deref().or(self.said_out.as_deref()).unwrap_or("it said nothing")
    }

    /// `` `COMMAND` exited with N: WORDS `` (or "was ended by a signal").
    pub fn failure_text(&self, command: &str) -> String {
        let how = self.code.map_or_else(|| "was ended by a signal".to_string(), |c| format!("exited with {c}"));
        format!("`{command}` {how}: {}", self.words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOCKER_20_10: &str = "OCI runtime exec failed: exec failed: unable to start container process: exec: \"jdwpmux\": executable file not found in $PATH: unknown\r\n";
    const PODMAN_4_3: &str = "Error: runc: exec failed: unable to start container process: exec: \"jdwpmux\": executable file not found in $PATH: OCI runtime attempted to invoke a command that was not found\n";

    #[test]
    fn docker_20_10_says_not_found_on_stdout_with_126() {
        let a = Answer::new(Some(126), DOCKER_20_10.as_bytes(), b"");
        assert!(a.not_found());
        assert_eq!(a.said, None);
        assert_eq!(a.words(), DOCKER_20_10.trim_end());
        assert_eq!(a.failure_text("docker exec -i ct jdwpmux --version"), format!("`docker exec -i ct jdwpmux --version` exited with 126: {}", DOCKER_20_10.trim_end()));
    }

    #[test]
    fn podman_4_3_says_it_on_stderr_with_127() {
        let a = Answer::new(Some(127), b"", PODMAN_4_3.as_bytes());
        assert!(a.not_found());
        assert_eq!(a.words(), PODMAN_4_3.trim_end());
        // A shell's own "not found" is 127 too.
        assert!(Answer::new(Some(127), b"", b"sh: 1: jdwpmux: not found\n").not_found());
    }

    #[test]
    fn kubectl_passes_the_exit_code_through() {
        let a = Answer::new(Some(3), b"", b"command terminated with exit code 3\n");
        assert!(!a.not_found());
        assert_eq!(a.failure_text("kubectl exec -i pod --"), "`kubectl exec -i pod --` exited with 3: command terminated with exit code 3");
        // The runtime's message for a missing program, with kubectl's own exit code.
        let missing = format!("error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec \"1f\": {DOCKER_20_10}");
        assert!(Answer::new(Some(1), b"", missing.as_bytes()).not_found());
        // 127 from a shell in the pod, passed through.
        assert!(Answer::new(Some(127), b"", b"command terminated with exit code 127\n").not_found());
    }

    #[test]
    fn a_program_that_cannot_run_is_not_a_missing_one() {
        let denied = "OCI runtime exec failed: exec failed: unable to start container process: exec: \"/tmp/jdwpmux\": permission denied: unknown\r\n";
        let a = Answer::new(Some(126), denied.as_bytes(), b"");
        assert!(!a.not_found());
        assert_eq!(a.words(), denied.trim_end());
        // Other failures that merely mention the words are not it.
        assert!(!Answer::new(Some(1), b"", b"Error: no such container ct\n").not_found());
        assert!(!Answer::new(Some(0), DOCKER_20_10.as_bytes(), b"").not_found());
        assert!(!Answer::new(None, b"", PODMAN_4_3.as_bytes()).not_found());
    }

    #[test]
    fn stderr_is_quoted_before_stdout_and_silence_is_said() {
        let a = Answer::new(Some(1), b"partial answer\n", b"Error response from daemon: Container ct is not running\n");
        assert_eq!(a.words(), "Error response from daemon: Container ct is not running");
        let quiet = Answer::new(Some(126), b"", b"");
        assert!(!quiet.not_found());
        assert_eq!(quiet.failure_text("docker exec -i ct x"), "`docker exec -i ct x` exited with 126: it said nothing");
        assert_eq!(Answer::new(None, b"", b"").failure_text("c"), "`c` was ended by a signal: it said nothing");
        // What it printed is shown safe (no control characters reach a terminal).
        assert_eq!(Answer::new(Some(2), b"\x1b[31mred\n", b"").words(), "?[31mred");
    }
}
