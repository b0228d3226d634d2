//! The launch command: the template that starts `iolab agent --stdio` on a host (the system
//! ssh by default; `kubectl exec -i`, `srun` or anything with stdin and stdout), how `--push`
//! replaces its remote command, and the shared ssh connection closed at the end.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{HostsError, shell_quote};

/// The remote command in a launch template; `--push` replaces it with `sh`, which receives
/// the binary and the agent's protocol on its stdin ([`super::push`]).
pub const AGENT_COMMAND: &str = "iolab agent --stdio";

/// The default transport: the system ssh in batch mode (never a password prompt), one
/// multiplexed connection per host (push, agent and cleanup share it), closed at the end.
pub const DEFAULT_LAUNCH: &str = "ssh -o BatchMode=yes -o ControlMaster=auto -o ControlPath={control}/%C -o ControlPersist=60 {host} iolab agent --stdio";

/// The name of a controller's directory for ssh control sockets starts with this and its pid
/// (`iolab-ssh-PID-XXXXXX` in the temporary directory). It is defined beside the `--cleanup`
/// sweep that removes a dead controller's directory and the ssh masters still holding it
/// ([`crate::runner::leftovers::clean_ssh_controls`]): the runner is the earlier stage, so the
/// name lives there and this module takes it.
pub use crate::runner::leftovers::SSH_CONTROL_PREFIX as CONTROL_PREFIX;

/// The command that starts an agent on a host: a template with `{host}` (and `{control}`,
/// a private directory for ssh's control sockets), run by `sh -c`.
#[derive(Debug)]
pub struct Launch {
    template: String,
    control: Option<tempfile::TempDir>,
}

impl Launch {
    /// Checks a template (`None`: [`DEFAULT_LAUNCH`]).
    pub fn new(template: Option<&str>) -> Result<Launch, HostsError> {
        let template = template.unwrap_or(DEFAULT_LAUNCH).trim().to_string();
        // Without {host} every agent starts the same way (a local launcher: each host's
        // target still comes from its entry).
        if template.is_empty() {
            return Err(HostsError::BadLaunch(
                "empty template; e.g. --launch 'ssh -o BatchMode=yes {host} iolab agent --stdio'"
                    .into(),
            ));
        }
        let control = if template.contains("{control}") {
            Some(
                tempfile::Builder::new()
                    .prefix(&format!("{CONTROL_PREFIX}{}-", std::process::id()))
                    .tempdir()
                    .map_err(|e| {
                        HostsError::BadLaunch(format!(
                            "cannot make a directory for ssh control sockets: {e}"
                        ))
                    })?,
            )
        } else {
            None
        };
        Ok(Launch { template, control })
    }

    /// The template, as given.
    pub fn template(&self) -> &str {
        &self.template
    }

    fn fill(&self, s: &str, host: &str) -> String {
        let control = self
            .control
            .as_ref()
            .map(|d| d.path().display().to_string())
            .unwrap_or_default();
        s.replace("{control}", &control)
            .replace("{host}", &shell_quote(host))
    }

    /// The shell command that runs `remote` (default: the agent) on `host`.
    pub fn command(&self, host: &str, remote: Option<&str>) -> Result<String, HostsError> {
        let t = match remote {
            None => self.template.clone(),
            Some(r) => {
                // The bare command word only: `/opt/iolab agent --stdio` names a binary of
                // its own and is not replaced.
                let at = self.template.match_indices(AGENT_COMMAND).find(|(i, _)| {
                    self.template[..*i]
                        .chars()
                        .next_back()
                        .is_none_or(|c| c.is_whitespace() || c == '"' || c == '\'')
                });
                let Some((at, _)) = at else {
                    return Err(HostsError::BadLaunch(format!(
                        "--push needs the template to run '{AGENT_COMMAND}' (it is replaced by 'sh', which receives this binary on its stdin)"
                    )));
                };
                format!(
                    "{}{r}{}",
                    &self.template[..at],
                    &self.template[at + AGENT_COMMAND.len()..]
                )
            }
        };
        Ok(self.fill(&t, host))
    }

    /// Closes ssh's shared connection to `host`, when the template made one.
    pub(super) fn close_master(&self, host: &str) {
        if !(self.template.starts_with("ssh ") && self.template.contains("ControlPath")) {
            return;
        }
        let Some(at) = self.template.find("{host}") else {
            return;
        };
        let cmd = format!("{} -O exit {{host}}", &self.template[..at].trim_end());
        let cmd = self.fill(&cmd, host);
        if let Ok(mut c) = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            wait_or_kill(&mut c, Duration::from_secs(5));
        }
    }
}

/// Waits for a child up to `limit`, then kills it. Returns its exit code when it exited.
pub(super) fn wait_or_kill(c: &mut Child, limit: Duration) -> Option<i32> {
    let end = Instant::now() + limit;
    loop {
        match c.try_wait() {
            Ok(Some(s)) => return s.code(),
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = c.kill();
                let _ = c.wait();
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_is_filled_and_push_replaces_the_command() {
        let l = Launch::new(Some("ssh -o BatchMode=yes {host} iolab agent --stdio")).expect("ok");
        assert_eq!(
            l.command("u@h", None).expect("cmd"),
            "ssh -o BatchMode=yes u@h iolab agent --stdio"
        );
        assert_eq!(
            l.command("h", Some("/tmp/x agent --stdio")).expect("cmd"),
            "ssh -o BatchMode=yes h /tmp/x agent --stdio"
        );
        let e = Launch::new(Some(" ")).expect_err("empty");
        assert!(e.to_string().contains("{host}"), "{e}");
        let k =
            Launch::new(Some("kubectl exec -i {host} -- /opt/iolab agent --stdio")).expect("ok");
        assert!(k.command("p", Some("x")).is_err());
        let d = Launch::new(None).expect("default");
        let c = d.command("h", None).expect("cmd");
        assert!(
            c.contains("ControlPath=/") && !c.contains("{control}"),
            "{c}"
        );
    }
}
