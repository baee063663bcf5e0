//! The page: the template with its style and scripts inline, and each run's
//! header (JSON) and columns (base64) in `<script>` elements that the
//! browser does not run.
#![forbid(unsafe_code)]

use super::encode::base64;
use super::run::ViewRun;

const TEMPLATE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPTS: [&str; 4] = [
    include_str!("data.js"),
    include_str!("draw.js"),
    include_str!("panels.js"),
    include_str!("main.js"),
];

/// Text safe inside an HTML element (`<`, `>`, `&` escaped).
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('{', "&#123;")
}

/// Renders the page; the first run is the main one, a second is the
/// comparison.
pub fn render_page(title: &str, runs: &[ViewRun]) -> String {
    let mut data = String::new();
    for (i, run) in runs.iter().enumerate() {
        let mut header = run.header.clone();
        header["columns"] = serde_json::json!(run
            .columns
            .index
            .iter()
            .map(|(name, offset, len, count)| serde_json::json!([name, offset, len, count]))
            .collect::<Vec<_>>());
        // `<\/` keeps a `</script>` inside a string from closing the element.
        let json = header.to_string().replace("</", "<\\/");
        data.push_str(&format!(
            "<script type=\"application/json\" id=\"run{i}-header\">{json}</script>\n\
             <script type=\"text/plain\" id=\"run{i}-data\">{}</script>\n",
            base64(&run.columns.bytes)
        ));
    }
    let script = SCRIPTS.join("\n");
    // The data goes in last, so that nothing in it is taken for a placeholder.
    TEMPLATE
        .replace("{{STYLE}}", STYLE)
        .replace("{{SCRIPT}}", &script.replace("</script", "<\\/script"))
        .replace("{{TITLE}}", &escape_html(title))
        .replace("{{DATA}}", &data)
}
