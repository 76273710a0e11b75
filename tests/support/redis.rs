//! A `redis-server` of a test's own on 127.0.0.1 with a free port, stopped when dropped.
//! `scripts/test.sh` installs `redis-server` when it is missing and sets
//! `TOOLSMITH_REQUIRE_REDIS=1`; without both, a test that needs one says so and passes.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `redis-server` of this test's own, stopped when dropped.
pub struct RedisServer {
    child: Child,
    /// `redis://127.0.0.1:<port>/`.
    pub url: String,
}

impl RedisServer {
    /// Starts one; `None` when `redis-server` is not installed and not required.
    pub fn start() -> Option<Self> {
        let port = TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        Self::start_on(port)
    }

    /// The port it listens on.
    #[allow(dead_code)]
    pub fn port(&self) -> u16 {
        self.url
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// How many scripts (`EVAL`) the server has run: each shared store's step is one.
    #[allow(dead_code)]
    pub fn scripts_run(&self) -> u64 {
        scripts_run(self.port())
    }

    /// Starts one on `port` (a server of a test that stopped its first one and starts it
    /// again).
    pub fn start_on(port: u16) -> Option<Self> {
        let spawned = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(err) => {
                assert!(
                    std::env::var_os("TOOLSMITH_REQUIRE_REDIS").is_none(),
                    "redis-server could not start: {err}"
                );
                eprintln!("redis-server is not installed: skipping (scripts/test.sh installs it)");
                return None;
            }
        };
        let server = Self {
            child,
            url: format!("redis://127.0.0.1:{port}/"),
        };
        for _ in 0..200 {
            if ping(port) {
                return Some(server);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server did not start listening on port {port}");
    }
}

/// Whether a Redis on `port` answers `PING` with `+PONG`.
fn ping(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut reply = [0_u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream
            .read(&mut reply)
            .is_ok_and(|n| reply[..n].starts_with(b"+PONG"))
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How many scripts (`EVAL`) the server on `port` has run, from `INFO commandstats`.
#[allow(dead_code)]
pub fn scripts_run(port: u16) -> u64 {
    let out = Command::new("redis-cli")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "info",
            "commandstats",
        ])
        .output()
        .expect("redis-cli, installed with redis-server");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_eval:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse().ok())
        .unwrap_or(0)
}
