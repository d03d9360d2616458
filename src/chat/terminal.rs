//! The interactive prompts of `agentd chat`, drawn with crossterm in raw
//! mode: a line editor, a list to pick one option from (arrow keys, Enter)
//! or several (Space toggles), and a yes/no question. Each call blocks on
//! the keyboard (run it on a blocking thread), restores the terminal however
//! it ends, and leaves one summary line behind. Ctrl-C or Esc cancels
//! (`ErrorKind::Interrupted`); Ctrl-D on an empty line is the end of input.
//! An Enter on an empty line that needs text shows what is expected.

use std::io::{self, Write};

use crossterm::cursor::MoveToPreviousLine;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::style::Stylize;
use crossterm::terminal::{self, Clear, ClearType};
use crossterm::{queue, QueueableCommand};

use super::printable::printable;
use super::question::Choice;

/// Where the prompts are drawn: stdout, or stderr when stdout carries JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Screen {
    Stdout,
    Stderr,
}

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Screen::Stdout => io::stdout().write(buf),
            Screen::Stderr => io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Screen::Stdout => io::stdout().flush(),
            Screen::Stderr => io::stderr().flush(),
        }
    }
}

/// Raw mode for as long as it lives.
struct RawMode;

impl RawMode {
    fn enable() -> io::Result<Self> {
        terminal::enable_raw_mode()?;
        Ok(Self)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // Nothing more can be done if the terminal refuses.
        let _ = terminal::disable_raw_mode();
    }
}

fn cancelled() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "cancelled at the prompt")
}

/// The next key pressed (repeats count; releases do not).
fn next_key() -> io::Result<KeyEvent> {
    loop {
        if let Event::Key(key) = event::read()? {
            if key.kind != KeyEventKind::Release {
                return Ok(key);
            }
        }
    }
}

fn is_ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

/// Columns available for one line (a line never wraps, so redrawing can
/// count lines).
fn width() -> usize {
    terminal::size()
        .ok()
        .map(|(columns, _)| usize::from(columns))
        .filter(|columns| *columns > 8)
        .unwrap_or(80)
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn fit(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Reads one line after `prompt` (e.g. `> `), below the `question` line if
/// there is one. An empty line is refused when `empty_hint` is given: the
/// hint takes its place after the prompt (dimmed) until a key is typed.
/// `None` at the end of input (Ctrl-D on an empty line).
pub(super) fn read_line(
    screen: &mut Screen,
    question: Option<&str>,
    prompt: &str,
    empty_hint: Option<&str>,
) -> io::Result<Option<String>> {
    // Raw mode first, so that no key typed ahead is echoed or held back.
    let _raw = RawMode::enable()?;
    if let Some(question) = question {
        write!(
            screen,
            "{} {}\r\n",
            "?".green().bold(),
            printable(question).bold()
        )?;
    }
    let mut line = String::new();
    let mut hint = None;
    loop {
        // Only the tail that fits is shown, so the line never wraps.
        let room = width().saturating_sub(prompt.chars().count() + 1);
        screen.queue(Clear(ClearType::CurrentLine))?;
        match hint.take() {
            Some(hint) => write!(screen, "\r{}{}", prompt.cyan(), fit(hint, room).dim())?,
            None => {
                let skip = line.chars().count().saturating_sub(room);
                let shown: String = line.chars().skip(skip).collect();
                write!(screen, "\r{}{shown}", prompt.cyan())?;
            }
        }
        screen.flush()?;
        let key = next_key()?;
        match key.code {
            _ if is_ctrl(&key, 'c') || key.code == KeyCode::Esc => {
                // What follows starts on a line of its own.
                write!(screen, "\r\n")?;
                screen.flush()?;
                return Err(cancelled());
            }
            _ if is_ctrl(&key, 'd') && line.is_empty() => {
                write!(screen, "\r\n")?;
                return Ok(None);
            }
            _ if is_ctrl(&key, 'u') => line.clear(),
            KeyCode::Enter if line.trim().is_empty() && empty_hint.is_some() => {
                line.clear();
                hint = empty_hint;
            }
            KeyCode::Enter => {
                write!(screen, "\r\n")?;
                screen.flush()?;
                return Ok(Some(line));
            }
            KeyCode::Backspace => {
                line.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => line.push(c),
            _ => {}
        }
    }
}

/// Asks a free-text question; the answer is not empty.
pub(super) fn ask_text(screen: &mut Screen, question: &str) -> io::Result<Option<String>> {
    read_line(
        screen,
        Some(question),
        "> ",
        Some("(type an answer and press Enter; Esc leaves the question open)"),
    )
}

/// Asks for a line that may be empty (an optional reason).
pub(super) fn ask_optional(screen: &mut Screen, question: &str) -> io::Result<Option<String>> {
    read_line(screen, Some(question), "> ", None)
}

/// A list drawn in place, redrawn after every key.
struct List<'a> {
    question: &'a str,
    options: &'a [Choice],
    /// `Some` for a multi-select list: which options are chosen.
    chosen: Option<Vec<bool>>,
    cursor: usize,
    note: &'static str,
    /// Lines drawn last time, to go back over.
    drawn: u16,
}

impl List<'_> {
    fn lines(&self) -> Vec<String> {
        let width = width();
        let mut lines = vec![format!(
            "{} {}",
            "?".green().bold(),
            printable(self.question).bold()
        )];
        for (index, option) in self.options.iter().enumerate() {
            let here = index == self.cursor;
            let pointer = if here { ">" } else { " " };
            let tick = match &self.chosen {
                Some(chosen) if chosen[index] => "[x] ",
                Some(_) => "[ ] ",
                None => "",
            };
            let head = format!("{pointer} {tick}{}. {}", index + 1, printable(&option.label));
            let head_len = head.chars().count();
            let description = if option.description.is_empty() {
                String::new()
            } else {
                fit(
                    &format!(" - {}", printable(&option.description)),
                    width.saturating_sub(head_len + 1),
                )
            };
            let head = if here { head.cyan().bold() } else { head.stylize() };
            lines.push(format!("{head}{}", description.dim()));
        }
        let keys = if self.chosen.is_some() {
            "up/down move, space or a number toggles, enter confirms"
        } else {
            "up/down move, enter or a number chooses"
        };
        let hint = if self.note.is_empty() {
            keys.to_owned()
        } else {
            format!("{} ({keys})", self.note)
        };
        lines.push(format!("  {}", hint.dim()));
        lines
    }

    fn draw(&mut self, screen: &mut Screen) -> io::Result<()> {
        self.erase(screen)?;
        let lines = self.lines();
        for line in &lines {
            write!(screen, "{line}\r\n")?;
        }
        self.drawn = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        screen.flush()
    }

    fn erase(&mut self, screen: &mut Screen) -> io::Result<()> {
        if self.drawn > 0 {
            queue!(
                screen,
                MoveToPreviousLine(self.drawn),
                Clear(ClearType::FromCursorDown)
            )?;
            self.drawn = 0;
        }
        Ok(())
    }

    /// Replaces the list with one line: the question and what was chosen.
    fn settle(&mut self, screen: &mut Screen, answer: &str) -> io::Result<()> {
        self.erase(screen)?;
        write!(
            screen,
            "{} {} {}\r\n",
            "?".green().bold(),
            printable(self.question).bold(),
            printable(answer).cyan()
        )?;
        screen.flush()
    }
}

/// Lets the person pick one option (`multi == false`: the chosen index) or
/// one or more (`multi`: the chosen indexes, in list order).
pub(super) fn choose(
    screen: &mut Screen,
    question: &str,
    options: &[Choice],
    multi: bool,
) -> io::Result<Vec<usize>> {
    if options.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a list without options",
        ));
    }
    let _raw = RawMode::enable()?;
    let mut list = List {
        question,
        options,
        chosen: multi.then(|| vec![false; options.len()]),
        cursor: 0,
        note: "",
        drawn: 0,
    };
    loop {
        list.draw(screen)?;
        let key = next_key()?;
        list.note = "";
        match key.code {
            _ if is_ctrl(&key, 'c') => return Err(cancelled()),
            KeyCode::Esc => return Err(cancelled()),
            KeyCode::Up | KeyCode::Char('k') => list.cursor = list.cursor.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => list.cursor = (list.cursor + 1).min(options.len() - 1),
            KeyCode::Home => list.cursor = 0,
            KeyCode::End => list.cursor = options.len() - 1,
            KeyCode::Char(' ') => {
                let cursor = list.cursor;
                if let Some(chosen) = list.chosen.as_mut() {
                    chosen[cursor] = !chosen[cursor];
                }
            }
            // A number picks the option it shows: chooses it (one) or
            // toggles it (several).
            KeyCode::Char(digit @ '1'..='9') => {
                let index = digit as usize - '1' as usize;
                if index >= options.len() {
                    list.note = "no option has that number";
                    continue;
                }
                list.cursor = index;
                match list.chosen.as_mut() {
                    Some(chosen) => chosen[index] = !chosen[index],
                    None => {
                        list.settle(screen, &options[index].label)?;
                        return Ok(vec![index]);
                    }
                }
            }
            KeyCode::Enter => {
                let picked: Vec<usize> = match &list.chosen {
                    Some(chosen) => (0..options.len()).filter(|i| chosen[*i]).collect(),
                    None => vec![list.cursor],
                };
                if picked.is_empty() {
                    list.note = "choose at least one with space";
                    continue;
                }
                let labels: Vec<&str> = picked.iter().map(|i| options[*i].label.as_str()).collect();
                list.settle(screen, &labels.join(", "))?;
                return Ok(picked);
            }
            _ => {}
        }
    }
}

/// A yes/no question answered with `y` or `n`.
pub(super) fn confirm(screen: &mut Screen, question: &str) -> io::Result<bool> {
    Ok(keyed(screen, question, &["yes", "no"])? == 0)
}

/// A question answered with one key: the first letter of one of
/// `answers` (which start with different letters); the index of that one.
pub(super) fn keyed(screen: &mut Screen, question: &str, answers: &[&str]) -> io::Result<usize> {
    let _raw = RawMode::enable()?;
    let letters: Vec<char> = answers
        .iter()
        .filter_map(|answer| answer.chars().next())
        .collect();
    let hint = letters.iter().map(char::to_string).collect::<Vec<_>>().join("/");
    write!(
        screen,
        "{} {} {} ",
        "?".green().bold(),
        printable(question).bold(),
        format!("[{hint}]").dim()
    )?;
    screen.flush()?;
    loop {
        let key = next_key()?;
        let picked = match key.code {
            _ if is_ctrl(&key, 'c') => return Err(cancelled()),
            KeyCode::Esc => return Err(cancelled()),
            KeyCode::Char(typed) => letters
                .iter()
                .position(|letter| letter.eq_ignore_ascii_case(&typed)),
            _ => None,
        };
        let Some(picked) = picked else { continue };
        write!(screen, "{}\r\n", answers[picked].cyan())?;
        screen.flush()?;
        return Ok(picked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_with_an_ellipsis() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("a longer description", 8), "a longe…");
    }
}
