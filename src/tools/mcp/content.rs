//! An MCP tool result -> the text the model sees. Text blocks are kept as
//! they are; other blocks (images, audio, resources) are named, since the
//! model gets text only. A result without content shows its structured
//! content as JSON.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::domain::ToolOutput;

/// The model's view of `result`.
pub(super) fn to_output(result: CallToolResult) -> ToolOutput {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.is_empty() {
        if let Some(structured) = &result.structured_content {
            parts.push(structured.to_string());
        }
    }
    ToolOutput {
        content: parts.join("\n"),
        is_error: result.is_error.unwrap_or(false),
    }
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
        ContentBlock::Audio(audio) => format!("[audio: {}]", audio.mime_type),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { uri, mime_type, .. } => match mime_type {
                Some(mime_type) => format!("[resource {uri}: {mime_type}]"),
                None => format!("[resource {uri}]"),
            },
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        // Block kinds added by later protocol versions.
        _ => "[unsupported content]".to_owned(),
    }
}
