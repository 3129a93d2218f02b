//! The model's own chat template (the Jinja text of the GGUF metadata,
//! carried into `generation.json`), rendered with minijinja as
//! llama.cpp's servers render it: `messages`, `add_generation_prompt`,
//! `bos_token` and `eos_token`, and `raise_exception` for templates that
//! refuse a message order.

use codegloss_core::chat::Message;
use minijinja::{context, Environment, Error, ErrorKind};

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

/// Why a template could not be used.
#[derive(Debug, thiserror::Error)]
#[error("chat template: {0}")]
pub struct TemplateError(String);

fn raise_exception(message: String) -> Result<String, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

impl ChatTemplate {
    /// Compile `source`; an empty source is refused.
    pub fn new(source: &str, bos: &str, eos: &str) -> Result<ChatTemplate, TemplateError> {
        if source.trim().is_empty() {
            return Err(TemplateError(
                "the model carries no chat template (tokenizer.chat_template)".into(),
            ));
        }
        let mut env = Environment::new();
        env.add_function("raise_exception", raise_exception);
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| TemplateError(e.to_string()))?;
        Ok(ChatTemplate {
            env,
            bos: bos.to_string(),
            eos: eos.to_string(),
        })
    }

    /// The prompt text for `messages`, ready for the assistant's turn.
    pub fn render(&self, messages: &[Message]) -> Result<String, TemplateError> {
        let tmpl = self
            .env
            .get_template("chat")
            .map_err(|e| TemplateError(e.to_string()))?;
        let msgs: Vec<minijinja::Value> = messages
            .iter()
            .map(|m| context! { role => m.role.as_str(), content => m.content.as_str() })
            .collect();
        tmpl.render(context! {
            messages => msgs,
            add_generation_prompt => true,
            bos_token => self.bos.as_str(),
            eos_token => self.eos.as_str(),
        })
        .map_err(|e| TemplateError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHATML: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nDefault<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

    fn msg(role: &str, content: &str) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }

    #[test]
    fn renders_chatml_with_the_generation_prompt() {
        let t = ChatTemplate::new(CHATML, "", "<|im_end|>").unwrap();
        let got = t
            .render(&[msg("system", "Be brief."), msg("user", "Hi {{ there }}")])
            .unwrap();
        assert_eq!(
            got,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi {{ there }}<|im_end|>\n<|im_start|>assistant\n"
        );
        let got = t.render(&[msg("user", "x")]).unwrap();
        assert!(got.starts_with("<|im_start|>system\nDefault"));
    }

    #[test]
    fn refusals_and_empty_templates_are_errors() {
        assert!(ChatTemplate::new("  ", "", "").is_err());
        let t = ChatTemplate::new("{{ raise_exception('no system role') }}", "", "").unwrap();
        assert!(t
            .render(&[])
            .unwrap_err()
            .to_string()
            .contains("no system role"));
    }
}
