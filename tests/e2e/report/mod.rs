//! The HTML report, read as text and rendered in a browser.

mod html;
mod html_chromium;
