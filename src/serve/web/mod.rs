//! The web frontend of `geode serve` (`--http ADDR:PORT`): the Gemini frontend's routes and
//! index, answered as HTML to web browsers and as JSON to scripts, over HTTP/1.1.
//!
//! Layout: [`route`] turns a request into a route and builds the links pages write (pure),
//! [`html`] the pages and the stylesheet (pure).

pub mod html;
pub mod route;
