//! A Restate server of the caller's own on 127.0.0.1 with free ports, in a directory of its
//! own, stopped when dropped; and the few HTTP requests its admin API and ingress take.
//!
//! The server is the npm package `@restatedev/restate-server`: `scripts/test.sh` installs it
//! under `target/restate` and sets `TOOLSMITH_RESTATE_SERVER` to its binary.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// A Restate server of this process's own, stopped (and its data removed) when dropped.
pub struct RestateServer {
    child: Child,
    dir: PathBuf,
    /// `http://127.0.0.1:<port>`: where runs are started and decided.
    pub ingress: String,
    /// `http://127.0.0.1:<port>`: where deployments are registered.
    pub admin: String,
}

/// A free port on 127.0.0.1.
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

impl RestateServer {
    /// The server's binary: `TOOLSMITH_RESTATE_SERVER`, the one `scripts/test.sh` installs,
    /// or `restate-server` on the `PATH`.
    pub fn binary() -> Option<PathBuf> {
        if let Some(path) = std::env::var_os("TOOLSMITH_RESTATE_SERVER") {
            return Some(PathBuf::from(path));
        }
        let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "target/restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server",
        );
        if installed.exists() {
            return Some(installed);
        }
        let on_path = std::env::var_os("PATH")?;
        std::env::split_paths(&on_path)
            .map(|dir| dir.join("restate-server"))
            .find(|path| path.exists())
    }

    /// Starts one and waits until its admin API answers. A retried invocation is tried
    /// again after 50 ms, then at most every half second: a service process killed in a test
    /// is replaced in milliseconds. A server that exits before it answers (another process
    /// took one of its free ports between the check and the bind) is started again on
    /// other ports, up to three times.
    pub fn start(binary: &Path) -> Result<Self, String> {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::start_once(binary) {
                Ok(server) => return Ok(server),
                Err(err) => last = err,
            }
        }
        Err(last)
    }

    fn start_once(binary: &Path) -> Result<Self, String> {
        let (ingress, admin, fabric) = (free_port()?, free_port()?, free_port()?);
        let dir = std::env::temp_dir().join(format!(
            "toolsmith-restate-{}-{ingress}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let child = Command::new(binary)
            .arg("--no-logo")
            .env("RESTATE_BIND_IP", "127.0.0.1")
            .env("RESTATE_ADVERTISED_HOST", "127.0.0.1")
            .env("RESTATE_LISTEN_MODE", "tcp")
            .env("RESTATE_BIND_PORT", fabric.to_string())
            .env("RESTATE_INGRESS__BIND_PORT", ingress.to_string())
            .env("RESTATE_ADMIN__BIND_PORT", admin.to_string())
            .env("RESTATE_BASE_DIR", &dir)
            .env("RESTATE_NODE_NAME", "toolsmith-test")
            .env("RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL", "50ms")
            .env("RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL", "500ms")
            .env("RESTATE_DEFAULT_RETRY_POLICY__MAX_ATTEMPTS", "1000")
            .env("RESTATE_DISABLE_PROMETHEUS", "true")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("restate-server does not start: {e}"))?;
        let mut server = Self {
            child,
            dir,
            ingress: format!("http://127.0.0.1:{ingress}"),
            admin: format!("http://127.0.0.1:{admin}"),
        };
        // A loaded two-core machine can take a while to start it: wait up to two minutes.
        for _ in 0..1200 {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "restate-server exited before it answered: {status}"
                ));
            }
            let ready = matches!(
                http("GET", &format!("{}/health", server.admin), None),
                Ok((200, _))
            ) && matches!(
                http("GET", &format!("{}/restate/health", server.ingress), None),
                Ok((200, _))
            );
            if ready {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err("restate-server did not answer within 120 s".into())
    }

    /// Registers the service endpoint at `uri` (it must be listening).
    pub fn register(&self, uri: &str) -> Result<(), String> {
        let body = format!(r#"{{"uri": "{uri}"}}"#);
        match http("POST", &format!("{}/deployments", self.admin), Some(&body))? {
            (200..=299, _) => Ok(()),
            (status, text) => Err(format!("registering {uri}: {status} {text}")),
        }
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One HTTP request, JSON in and out: the status and the body.
pub fn http(method: &str, url: &str, body: Option<&str>) -> Result<(u16, String), String> {
    http_within(method, url, body, Duration::from_secs(30))
}

/// [`http`], given up after `timeout`.
pub fn http_within(
    method: &str,
    url: &str,
    body: Option<&str>,
    timeout: Duration,
) -> Result<(u16, String), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
        let mut request = client.request(method, url).timeout(timeout);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_owned());
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| e.to_string())?;
        Ok((status, text))
    })
}

/// A service process of the `restate` example (`<binary> serve <port> <dir> [<point>:<n>]`),
/// and its stdout's lines as they come.
pub struct Service {
    child: Child,
    /// The lines it printed after `READY`.
    pub lines: Receiver<String>,
}

impl Service {
    /// Starts one and waits until it listens.
    pub fn start(binary: &Path, port: u16, dir: &Path, kill: Option<&str>) -> Result<Self, String> {
        let mut child = Command::new(binary)
            .arg("serve")
            .arg(port.to_string())
            .arg(dir)
            .args(kill)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("the service does not start: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut service = Self { child, lines };
        match service.lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) if line == "READY" => Ok(service),
            other => {
                let _ = service.child.kill();
                let _ = service.child.wait();
                Err(format!("the service did not start: {other:?}"))
            }
        }
    }

    /// SIGKILL, from outside.
    pub fn kill(mut self) -> Result<(), String> {
        self.child.kill().map_err(|e| e.to_string())?;
        let _ = self.child.wait();
        Ok(())
    }

    /// SIGINT, as Ctrl-C would: the service stops serving and ends as a process does when
    /// it is done (its telemetry written, when exported); SIGKILL if it has not within 10 s.
    pub fn stop(mut self) -> Result<(), String> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-INT", &pid]).status();
        if sent.is_ok_and(|status| status.success()) {
            for _ in 0..100 {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        self.kill()
    }
}
