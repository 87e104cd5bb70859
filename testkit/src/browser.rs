//! A real browser for tests: Debian's `chromium`, headless, driven by `chromedriver` over
//! the W3C WebDriver protocol (JSON over HTTP on loopback). Each browser gets a fresh
//! profile folder and is told to stay off the network; dropping it ends the session (which
//! closes Chromium) and then chromedriver.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use serde_json::{json, Value};

use super::http;

/// How long chromedriver may take to say it listens.
const DRIVER_START: Duration = Duration::from_secs(30);
/// Chromium's window: the size of the screenshots.
pub const WINDOW: (u32, u32) = (1600, 1700);

/// The flags the machine needs: no sandbox (root in a container), no GPU, nothing that
/// reaches the network (there is none), a profile of its own.
fn chromium_args(profile: &std::path::Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.push(format!("--window-size={},{}", WINDOW.0, WINDOW.1));
    args
}

fn on_path(tool: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(tool)).find(|f| f.is_file()))
}

/// Whether `chromium` and `chromedriver` are installed.
pub fn browser_available() -> bool {
    on_path("chromium").is_some() && on_path("chromedriver").is_some()
}

pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session through it.
    pub async fn start() -> Result<Browser> {
        let chromium = on_path("chromium").context("chromium is not installed (apt-get install chromium chromium-driver)")?;
        let mut driver = Command::new(on_path("chromedriver").context("chromedriver is not installed")?)
            .arg("--port=0")
            // Its own process group, Chromium's processes included: Drop can end them all.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("run chromedriver")?;
        let port = match driver_port(&mut driver) {
            Ok(p) => p,
            Err(e) => {
                kill_group(&mut driver);
                return Err(e);
            }
        };
        let profile = tempfile::tempdir()?;
        let mut b = Browser { driver, addr: SocketAddr::from(([127, 0, 0, 1], port)), session: String::new(), _profile: profile };
        let caps = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": chromium, "args": chromium_args(b._profile.path()) }
            }}
        });
        let v = b.call("POST", "/session", Some(caps)).await?;
        b.session = v["sessionId"].as_str().context("no session id")?.to_string();
        Ok(b)
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let headers = [("Content-Type", "application/json")];
        let r = http::request(self.addr, method, path, &headers, body.as_bytes()).await?;
        let v: Value = serde_json::from_slice(&r.body).with_context(|| format!("chromedriver said: {}", r.text()))?;
        if r.status != 200 {
            bail!("WebDriver {method} {path}: {} {}", r.status, v["value"]["message"]);
        }
        Ok(v["value"].clone())
    }

    fn path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub async fn goto(&self, url: &str) -> Result<()> {
        self.call("POST", &self.path("/url"), Some(json!({ "url": url }))).await.map(drop)
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page.
    pub async fn run(&self, script: &str, args: Value) -> Result<Value> {
        self.call("POST", &self.path("/execute/sync"), Some(json!({ "script": script, "args": args }))).await
    }

    /// Polls `script` until it returns something truthy; returns that.
    pub async fn wait_for(&self, what: &str, script: &str, timeout: Duration) -> Result<Value> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let v = self.run(script, json!([])).await?;
            let truthy = !matches!(&v, Value::Null | Value::Bool(false)) && v != json!(0) && v != json!("");
            if truthy {
                return Ok(v);
            }
            if tokio::time::Instant::now() > deadline {
                bail!("timed out waiting for {what} (last: {v})");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the first element matching a CSS selector, as a user would (finding it again
    /// if the page replaced it in between, a few times).
    pub async fn click(&self, css: &str) -> Result<()> {
        let mut tries = 0;
        loop {
            let e = self.call("POST", &self.path("/element"), Some(json!({ "using": "css selector", "value": css }))).await?;
            let id = e.as_object().and_then(|o| o.values().next()).and_then(|v| v.as_str()).context("no element id")?.to_string();
            match self.call("POST", &self.path(&format!("/element/{id}/click")), Some(json!({}))).await {
                Err(e) if tries < 3 && e.to_string().contains("stale element") => tries += 1,
                r => return r.map(drop),
            }
        }
    }

    /// Sets the window's size, as a person dragging its corner would.
    pub async fn resize(&self, width: u32, height: u32) -> Result<()> {
        self.call("POST", &self.path("/window/rect"), Some(json!({ "width": width, "height": height }))).await.map(drop)
    }

    /// A PNG of the window.
    pub async fn screenshot(&self) -> Result<Vec<u8>> {
        let v = self.call("GET", &self.path("/screenshot"), None).await?;
        base64::engine::general_purpose::STANDARD.decode(v.as_str().context("no screenshot")?).context("base64")
    }
}

/// Reads chromedriver's "started successfully on port N" line.
fn driver_port(driver: &mut Child) -> Result<u16> {
    let out = driver.stdout.take().context("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        let mut line = String::new();
        while r.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
            if let Some(p) = line.split("started successfully on port ").nth(1) {
                let _ = tx.send(p.trim().trim_end_matches('.').parse::<u16>().ok());
            }
            line.clear();
        }
        // Keep reading so chromedriver never blocks on a full pipe.
        let _ = std::io::copy(&mut r, &mut std::io::sink());
    });
    match rx.recv_timeout(DRIVER_START) {
        Ok(Some(p)) => Ok(p),
        _ => bail!("chromedriver did not say its port within {DRIVER_START:?}"),
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Synchronously: ending the session makes chromedriver close Chromium and its helpers.
        if !self.session.is_empty() {
            if let Ok(mut s) = std::net::TcpStream::connect_timeout(&self.addr, Duration::from_secs(5)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
                let req = format!("DELETE /session/{} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.session, self.addr);
                let _ = s.write_all(req.as_bytes());
                let _ = s.read_to_end(&mut Vec::new());
            }
        }
        kill_group(&mut self.driver);
    }
}

/// Kills chromedriver and whatever it started that is still there (a Chromium left behind
/// by a session that could not be ended), then reaps chromedriver.
fn kill_group(driver: &mut Child) {
    let group = format!("-{}", driver.id());
    let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
    let _ = driver.kill();
    let _ = driver.wait();
}
