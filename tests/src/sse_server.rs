//! A local HTTP server for provider tests: each request gets the next scripted reply, whose
//! body is sent in small chunks with short pauses (so SSE events, lines and UTF-8 characters
//! arrive split), and every request's path, headers and JSON body are recorded.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;

/// How a scripted body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Normally.
    Complete,
    /// The connection breaks off after the last chunk (no chunked-encoding terminator).
    Cut,
    /// The connection stays open and silent after the last chunk.
    Hang,
}

/// One reply.
#[derive(Debug, Clone)]
pub struct Scripted {
    /// The HTTP status.
    pub status: u16,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// The whole body, sent in chunks.
    pub body: Vec<u8>,
    /// Bytes per chunk.
    pub chunk: usize,
    /// Pause before each chunk.
    pub pause: Duration,
    /// How the body ends.
    pub end: End,
    /// Wait before the response head is sent.
    pub head_delay: Duration,
}

impl Scripted {
    /// A `200 text/event-stream` reply with `body`, 7 bytes at a time.
    pub fn sse(body: impl Into<Vec<u8>>) -> Scripted {
        Scripted {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into(),
            chunk: 7,
            pause: Duration::from_millis(1),
            end: End::Complete,
            head_delay: Duration::ZERO,
        }
    }

    /// An error reply with a JSON (or any) body.
    pub fn status(status: u16, body: &str) -> Scripted {
        Scripted {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
            chunk: 64,
            pause: Duration::ZERO,
            end: End::Complete,
            head_delay: Duration::ZERO,
        }
    }

    /// The same reply ending as `end`.
    pub fn ending(mut self, end: End) -> Scripted {
        self.end = end;
        self
    }

    /// The same reply, its head sent only after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Scripted {
        self.head_delay = delay;
        self
    }

    /// The same reply with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Scripted {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request path.
    pub path: String,
    /// Lowercase names.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`null` when it was not JSON).
    pub body: Value,
    /// The body as sent.
    pub raw: Vec<u8>,
    /// The query string, if any (`alt=sse`).
    pub query: Option<String>,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Scripted>>,
    recorded: Mutex<Vec<Recorded>>,
}

/// A running server on `127.0.0.1:<free port>`.
pub struct SseServer {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    shared: Arc<Shared>,
}

impl SseServer {
    /// Serves `replies` in order (a request beyond them gets a 500).
    pub async fn start(replies: Vec<Scripted>) -> SseServer {
        let shared = Arc::new(Shared {
            script: Mutex::new(replies.into()),
            recorded: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        SseServer {
            base: format!("http://{addr}"),
            shared,
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.recorded.lock().expect("lock").clone()
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.recorded.lock().expect("lock").push(Recorded {
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw: body.to_vec(),
        query: uri.query().map(str::to_owned),
    });
    let next = shared.script.lock().expect("lock").pop_front();
    let reply = next.unwrap_or_else(|| Scripted::status(500, "no scripted reply left"));
    if !reply.head_delay.is_zero() {
        tokio::time::sleep(reply.head_delay).await;
    }
    let mut response =
        Response::builder().status(StatusCode::from_u16(reply.status).expect("status"));
    for (k, v) in &reply.headers {
        response = response.header(k, v);
    }
    response
        .body(Body::from_stream(chunks(reply)))
        .expect("response")
}

fn chunks(
    reply: Scripted,
) -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    let pieces: VecDeque<Vec<u8>> = reply
        .body
        .chunks(reply.chunk.max(1))
        .map(<[u8]>::to_vec)
        .collect();
    futures_util::stream::unfold(
        (pieces, reply.end, reply.pause, false),
        |(mut pieces, end, pause, over)| async move {
            if over {
                return None;
            }
            match pieces.pop_front() {
                Some(piece) => {
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    Some((Ok(piece), (pieces, end, pause, false)))
                }
                None => match end {
                    End::Complete => None,
                    End::Cut => {
                        // Let hyper flush what was sent before it drops the connection.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Some((
                            Err(std::io::Error::other("cut by the test")),
                            (pieces, end, pause, true),
                        ))
                    }
                    End::Hang => {
                        std::future::pending::<()>().await;
                        None
                    }
                },
            }
        },
    )
}
