//! A real reverse proxy in front of a test app: Debian's nginx, started by the test with its own
//! configuration in a temporary folder, on a free loopback port, forwarding websockets and
//! appending the client's address to `X-Forwarded-For` as the production configuration in
//! `docs/operations.md` does. It connects to askloop from 127.0.0.1 (`proxy_bind`), so that is
//! the address to trust; clients reach it from any loopback address (127.0.0.0/8 is all on `lo`),
//! which is what it forwards. Stopped when dropped.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::TestApp;

/// The address nginx connects to askloop from: the one to trust.
pub const PROXY_ADDRESS: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// A running nginx in front of one app.
pub struct Nginx {
    /// `http://127.0.0.1:<port>`: where clients reach askloop through it.
    pub base: String,
    child: Child,
    folder: PathBuf,
}

/// The nginx binary: `NGINX` when set, else Debian's `/usr/sbin/nginx` (not on every `PATH`),
/// else `nginx`.
fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("NGINX") {
        return PathBuf::from(path);
    }
    let debian = PathBuf::from("/usr/sbin/nginx");
    if debian.is_file() {
        debian
    } else {
        PathBuf::from("nginx")
    }
}

/// The configuration: one unprivileged process in the foreground, every path in `folder`.
fn configuration(folder: &std::path::Path, port: u16, upstream: SocketAddr) -> String {
    let folder = folder.display();
    format!(
        r#"daemon off;
master_process off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
worker_rlimit_nofile 8192;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://{upstream};
            proxy_bind {PROXY_ADDRESS};
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header Forwarded "";
            proxy_read_timeout 300s;
            proxy_buffering off;
        }}
    }}
}}
"#
    )
}

impl Nginx {
    /// Start nginx in front of `app`, and wait until it accepts connections.
    pub async fn in_front_of(app: &TestApp) -> Self {
        let upstream = app.addr;
        tokio::task::spawn_blocking(move || Self::start(upstream))
            .await
            .expect("nginx started")
    }

    fn start(upstream: SocketAddr) -> Self {
        let folder = std::env::temp_dir().join(format!("askloop-nginx-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&folder).expect("nginx's folder");
        // A port the system just handed out and took back: another process may take it before
        // nginx does, in which case nginx says so and another is tried.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let conf = folder.join("nginx.conf");
            std::fs::write(&conf, configuration(&folder, port, upstream)).expect("written");
            let child = Command::new(binary())
                .arg("-p")
                .arg(&folder)
                .arg("-e")
                .arg(folder.join("error.log"))
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|err| {
                    panic!(
                        "nginx does not start ({err}): the proxy tests run a real nginx; \
                         `cargo xtask test --install-deps` installs it (locally: apt-get install \
                         nginx), or set NGINX to its binary"
                    )
                });
            let mut nginx = Self {
                base: format!("http://127.0.0.1:{port}"),
                child,
                folder: folder.clone(),
            };
            match nginx.until_listening(port) {
                Ok(()) => return nginx,
                Err(log) if log.contains("Address already in use") => continue,
                Err(log) => panic!("nginx exited at start:\n{log}"),
            }
        }
        panic!("nginx found no free port in five tries");
    }

    /// Wait until nginx accepts on `port`; its error log if it exits first.
    fn until_listening(&mut self, port: u16) -> Result<(), String> {
        let deadline = Instant::now() + crate::wait::PATIENCE;
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Err(
                    std::fs::read_to_string(self.folder.join("error.log")).unwrap_or_default()
                );
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            assert!(Instant::now() < deadline, "nginx never listened on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What nginx logged (warnings and errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}
