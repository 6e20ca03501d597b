//! A real SMTP server for the mail tests: aiosmtpd (pinned in `xtask/src/smtpd.rs`, installed by
//! `cargo xtask test` under `target/tools/aiosmtpd-<version>`, or the Python in `ASKLOOP_SMTPD`)
//! with its Maildir handler, on a port of the test's choosing, so a test can stop it and start it
//! again on the same port. Messages are read back from the Maildir and parsed by the test.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The aiosmtpd the suite runs; `xtask/src/smtpd.rs` installs the same one.
const FOLDER: &str = "aiosmtpd-1.4.6";

/// A running (or stopped) mail server and the folder it delivers to.
pub struct SmtpServer {
    addr: SocketAddr,
    maildir: PathBuf,
    child: Option<Child>,
}

fn python() -> PathBuf {
    match std::env::var_os("ASKLOOP_SMTPD") {
        Some(path) => PathBuf::from(path),
        None => crate::app::tools_folder(FOLDER).join("bin").join("python"),
    }
}

/// One mail as the server stored it.
#[derive(Debug, Clone)]
pub struct Mail {
    /// The raw message.
    pub raw: String,
}

impl Mail {
    /// The first header `name` (case-insensitive), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.raw.split("\n\n").next().unwrap_or("");
        let mut found: Option<String> = None;
        for line in head.lines() {
            let line = line.trim_end_matches('\r');
            if line.starts_with([' ', '\t']) {
                if let Some(value) = found.as_mut() {
                    value.push(' ');
                    value.push_str(line.trim());
                }
                continue;
            }
            if found.is_some() {
                break;
            }
            if let Some((key, value)) = line.split_once(':')
                && key.eq_ignore_ascii_case(name)
            {
                found = Some(value.trim().to_owned());
            }
        }
        found
    }

    /// The body with quoted-printable soft breaks and escapes undone (enough for askloop's
    /// ASCII-safe parts and the tests' assertions).
    pub fn text(&self) -> String {
        let mut out = String::new();
        let joined = self.raw.replace("=\r\n", "").replace("=\n", "");
        let bytes = joined.as_bytes();
        let mut i = 0;
        let mut decoded = Vec::with_capacity(bytes.len());
        while i < bytes.len() {
            if bytes[i] == b'='
                && i + 2 < bytes.len()
                && let Ok(byte) = u8::from_str_radix(&joined[i + 1..i + 3], 16)
            {
                decoded.push(byte);
                i += 3;
                continue;
            }
            decoded.push(bytes[i]);
            i += 1;
        }
        out.push_str(&String::from_utf8_lossy(&decoded));
        out
    }
}

impl SmtpServer {
    /// Start a server on a free port.
    pub async fn start() -> Self {
        let addr = crate::receiver::reserve_port();
        let mut server = Self::stopped_on(addr);
        server.up().await;
        server
    }

    /// A server that will listen on `addr` once [`up`](Self::up) is called.
    pub fn stopped_on(addr: SocketAddr) -> Self {
        let maildir =
            std::env::temp_dir().join(format!("askloop-mail-{}", uuid::Uuid::new_v4().simple()));
        for sub in ["tmp", "new", "cur"] {
            std::fs::create_dir_all(maildir.join(sub)).expect("maildir folders");
        }
        Self {
            addr,
            maildir,
            child: None,
        }
    }

    /// `smtp://host:port` for `ASKLOOP_SMTP_URL`.
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    /// Start listening (again).
    pub async fn up(&mut self) {
        let python = python();
        assert!(
            python.is_file(),
            "{} is missing: run `cargo xtask test` (it installs aiosmtpd), or set ASKLOOP_SMTPD \
             to a Python that has aiosmtpd",
            python.display()
        );
        let child = Command::new(&python)
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(self.addr.to_string())
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&self.maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("aiosmtpd starts");
        self.child = Some(child);
        let started = Instant::now();
        while tokio::net::TcpStream::connect(self.addr).await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "aiosmtpd did not listen on {}",
                self.addr
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stop listening (mail sent meanwhile is refused at connect).
    pub fn down(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn folder(&self) -> &Path {
        &self.maildir
    }

    /// Every mail received so far, oldest first, each once: askloop re-sends a mail whose
    /// acknowledgement it did not hear in time (a slow server on a loaded machine) under the same
    /// Message-ID, and a reader's mail client shows those as one mail, so these do too.
    pub fn mails(&self) -> Vec<Mail> {
        let mut seen = std::collections::HashSet::new();
        self.received()
            .into_iter()
            .filter(|mail| mail.header("message-id").is_none_or(|id| seen.insert(id)))
            .collect()
    }

    /// Every mail received so far, oldest first, re-sends included.
    fn received(&self) -> Vec<Mail> {
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = ["new", "cur"]
            .iter()
            .flat_map(|sub| {
                std::fs::read_dir(self.folder().join(sub))
                    .into_iter()
                    .flatten()
            })
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| {
                let modified = entry.metadata().ok()?.modified().ok()?;
                Some((modified, entry.path()))
            })
            .collect();
        files.sort();
        files
            .into_iter()
            .filter_map(|(_, path)| std::fs::read_to_string(path).ok())
            .map(|raw| Mail { raw })
            .collect()
    }

    /// Wait (up to `within`) until at least `count` mails arrived; all of them.
    pub async fn wait_for(&self, count: usize, within: Duration) -> Vec<Mail> {
        let started = Instant::now();
        loop {
            let mails = self.mails();
            if mails.len() >= count {
                return mails;
            }
            assert!(
                started.elapsed() < within,
                "expected {count} mails within {within:?}, got {}: {:?}",
                mails.len(),
                mails
                    .iter()
                    .map(|m| m.header("subject"))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.down();
        let _ = std::fs::remove_dir_all(&self.maildir);
    }
}
