"""When a skill fires: triggers, calendars, every scheduled time, the outlook, and times read from words."""
