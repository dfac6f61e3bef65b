"""How figures and text read on every app's pages: the `cv` template library (tokens, percentages,
costs, durations, severity, Markdown) and the safe renderers behind it (rendering.py: Markdown and
highlighted code through nh3), and the Panel an app hands the conversation page. It sits below every
app (it reads no model and makes no query), so any app's template may load `cv`."""
