//! Just enough HTTP/1.1 for the client: read a request (length-delimited or
//! chunked body, keep-alive), write a response with a known length.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// One HTTP request as read off the connection.
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

/// One HTTP response to write.
pub(crate) struct Response {
    pub status: u16,
    pub content_type: &'static str,
    /// Extra headers, after the standard ones.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub(crate) fn new(status: u16, content_type: &'static str, body: String) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body,
        }
    }

    /// The status line, headers and blank line.
    pub(crate) fn head(&self, keep_alive: bool) -> String {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\nrequest-id: req_fake\r\nConnection: {}\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len(),
            if keep_alive { "keep-alive" } else { "close" }
        );
        for (name, value) in &self.headers {
            head.push_str(&one_line(name));
            head.push_str(": ");
            head.push_str(&one_line(value));
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head
    }

    pub(crate) fn write_to(&self, out: &mut impl Write, keep_alive: bool) -> io::Result<()> {
        out.write_all(self.head(keep_alive).as_bytes())?;
        out.write_all(self.body.as_bytes())?;
        out.flush()
    }
}

/// A header name or value with no line breaks (a script cannot split the
/// response).
fn one_line(s: &str) -> String {
    s.chars().filter(|c| *c != '\r' && *c != '\n').collect()
}

/// The reason phrase of a status code.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// What the head of a request said about its body and connection.
struct Head {
    content_length: usize,
    chunked: bool,
    keep_alive: bool,
}

/// Reads the header lines up to the blank line; `None` at end of stream.
fn read_headers(reader: &mut BufReader<TcpStream>, keep_alive: bool) -> io::Result<Option<Head>> {
    let mut head = Head {
        content_length: 0,
        chunked: false,
        keep_alive,
    };
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            return Ok(None);
        }
        let header = header.trim_end();
        if header.is_empty() {
            return Ok(Some(head));
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim().to_ascii_lowercase();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => head.content_length = value.parse().unwrap_or(0),
            "transfer-encoding" => head.chunked = value.contains("chunked"),
            "connection" if value.contains("close") => head.keep_alive = false,
            "connection" if value.contains("keep-alive") => head.keep_alive = true,
            _ => {}
        }
    }
}

/// Reads a chunked body, trailers included.
fn read_chunked(reader: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line)?;
        let size_hex = size_line.trim().split(';').next().unwrap_or("0");
        let size = usize::from_str_radix(size_hex, 16).unwrap_or(0);
        if size == 0 {
            // Trailers until the blank line.
            loop {
                let mut t = String::new();
                if reader.read_line(&mut t)? == 0 || t.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        let mut chunk = vec![0; size];
        reader.read_exact(&mut chunk)?;
        body.extend_from_slice(&chunk);
        let mut crlf = String::new();
        reader.read_line(&mut crlf)?;
    }
}

/// Reads the next request of a connection; `None` when the peer closed it.
pub(crate) fn read_request(reader: &mut BufReader<TcpStream>) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let version = parts.next().unwrap_or("HTTP/1.1");
    let Some(head) = read_headers(reader, version != "HTTP/1.0")? else {
        return Ok(None);
    };
    let body = if head.chunked {
        read_chunked(reader)?
    } else {
        let mut body = vec![0; head.content_length];
        reader.read_exact(&mut body)?;
        body
    };
    Ok(Some(Request {
        method,
        path,
        body,
        keep_alive: head.keep_alive,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_carries_status_reason_and_extra_headers_on_one_line_each() {
        let mut r = Response::new(429, "application/json", "{}".into());
        r.headers
            .push(("retry-after".into(), "1\r\nX-Evil: 1".into()));
        let head = r.head(false);
        assert!(head.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
        assert!(head.contains("\r\nContent-Length: 2\r\n"));
        assert!(head.contains("\r\nConnection: close\r\n"));
        assert!(head.contains("\r\nretry-after: 1X-Evil: 1\r\n"));
        assert!(head.ends_with("\r\n\r\n"));
    }
}
