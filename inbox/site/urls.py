from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from inbox.site import error_pages, health, metrics_view
from inbox.web import (
    chat_extras,
    draft_views,
    login_limit,
    media,
    password_reset,
    progress_views,
    status_views,
    template_api,  # noqa: F401  (its operations join the API's router)
    template_views,
    views,
    why_views,
)
from inbox.web.api import api
from inbox.web.reports import views as report_views
from inbox.web.settings import (
    admin_pages,
    business_settings,
    channel_add,
    price_list_items,
    replay_pages,
    replies_labels_page,
    review_fix_views,
    team_page,
)
from inbox.web.settings.notification_views import notification_settings
from integrations.bitrix24.settings_page import bitrix24_settings
from integrations.whatsapp import template_admin

# Outside the language middleware too, in the visitor's language (error_pages.py).
handler400 = error_pages.bad_request
handler500 = error_pages.server_error

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_view.metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/login/", login_limit.login, name="login"),
    path("accounts/password_reset/", password_reset.password_reset, name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("inbox/", views.chat_list, name="chat_list"),
    path("inbox/sandbox/", include("integrations.sandbox.urls")),
    path("inbox/media/<int:message_id>/", media.message_media, name="message_media"),
    path("inbox/chat/<int:chat_id>/", views.chat_detail, name="chat_detail"),
    path("inbox/chat/<int:chat_id>/earlier/", views.chat_earlier, name="chat_earlier"),
    path("inbox/chat/<int:chat_id>/history/", views.chat_history, name="chat_history"),
    path("inbox/chat/<int:chat_id>/reply/", views.reply, name="chat_reply"),
    path("inbox/chat/<int:chat_id>/note/", views.note, name="chat_note"),
    path("inbox/chat/<int:chat_id>/templates/", template_views.picker, name="chat_templates"),
    path("inbox/chat/<int:chat_id>/template/", template_views.send, name="chat_template_send"),
    path("inbox/chat/<int:chat_id>/pending/", template_views.keep_pending, name="chat_pending"),
    path(
        "inbox/chat/<int:chat_id>/pending/cancel/",
        template_views.cancel_pending,
        name="chat_pending_cancel",
    ),
    path(
        "inbox/chat/<int:chat_id>/messages/<int:message_id>/resend/",
        views.resend,
        name="message_resend",
    ),
    path("inbox/chat/<int:chat_id>/take-over/", views.take_over, name="chat_take_over"),
    path("inbox/chat/<int:chat_id>/draft/approve/", draft_views.approve, name="draft_approve"),
    path("inbox/chat/<int:chat_id>/draft/reject/", draft_views.reject, name="draft_reject"),
    path("inbox/approve/", draft_views.to_approve, name="drafts_to_approve"),
    path("inbox/approve/count/", draft_views.waiting_count, name="drafts_waiting"),
    path("inbox/chat/<int:chat_id>/release/", views.release, name="chat_release"),
    path("inbox/chat/<int:chat_id>/assign/", views.assign, name="chat_assign"),
    path("inbox/chat/<int:chat_id>/resolve/", status_views.resolve, name="chat_resolve"),
    path("inbox/chat/<int:chat_id>/snooze/", status_views.snooze, name="chat_snooze"),
    path("inbox/chat/<int:chat_id>/reopen/", status_views.reopen, name="chat_reopen"),
    path("inbox/chat/<int:chat_id>/read/", views.chat_read_count, name="chat_read_count"),
    path("inbox/chat/<int:chat_id>/label/", chat_extras.chat_label, name="chat_label"),
    path("inbox/chat/<int:chat_id>/canned/", chat_extras.canned_replies, name="chat_canned"),
    path("inbox/chat/<int:chat_id>/opt-out/", chat_extras.chat_opt_out, name="chat_opt_out"),
    path(
        "inbox/chat/<int:chat_id>/messages/<int:message_id>/why/",
        why_views.message_why,
        name="message_why",
    ),
    path(
        "inbox/chat/<int:chat_id>/messages/<int:message_id>/flag/",
        why_views.message_flag,
        name="message_flag",
    ),
    path("inbox/events/", views.events, name="inbox_events"),
    path("inbox/review/", admin_pages.review, name="review"),
    path("inbox/review/fix/alias/", review_fix_views.add_alias, name="review_fix_alias"),
    path("inbox/review/fix/item/", review_fix_views.add_item, name="review_fix_item"),
    path(
        "inbox/review/fix/manager-only/",
        review_fix_views.manager_only,
        name="review_fix_manager_only",
    ),
    path("inbox/review/fix/done/", review_fix_views.mark_fixed, name="review_fix_done"),
    path("inbox/reports/", report_views.report_page, name="reports"),
    path("inbox/reports/export.csv", report_views.report_csv, name="reports_csv"),
    path("inbox/settings/channels/", admin_pages.channels, name="settings_channels"),
    path("inbox/settings/channels/new/", channel_add.add_channel, name="settings_channel_add"),
    path(
        "inbox/settings/business/",
        business_settings.business_settings,
        name="settings_business",
    ),
    path(
        "inbox/settings/channels/<int:channel_id>/",
        admin_pages.channel_edit,
        name="settings_channel",
    ),
    path(
        "inbox/settings/channels/<int:channel_id>/test-connection/",
        admin_pages.channel_test_connection,
        name="settings_channel_test",
    ),
    path(
        "inbox/settings/channels/<int:channel_id>/templates/sync/",
        template_admin.sync_now,
        name="settings_channel_templates_sync",
    ),
    path(
        "inbox/settings/channels/<int:channel_id>/templates/reengage/",
        template_admin.choose_reengage,
        name="settings_channel_reengage",
    ),
    path("inbox/settings/price-list/", admin_pages.price_list, name="settings_price_list"),
    path(
        "inbox/settings/price-list/<int:list_id>/items/",
        price_list_items.items_page,
        name="settings_price_list_items",
    ),
    path(
        "inbox/settings/price-list/items/<int:item_id>/",
        price_list_items.edit_item_view,
        name="settings_price_list_item_edit",
    ),
    path(
        "inbox/settings/price-list/versions/<int:version_id>/restore/",
        admin_pages.price_list_restore,
        name="settings_price_list_restore",
    ),
    path(
        "inbox/settings/assistant/",
        admin_pages.assistant_settings_page,
        name="settings_assistant",
    ),
    path(
        "inbox/settings/replies-labels/",
        replies_labels_page.replies_labels,
        name="settings_replies_labels",
    ),
    path("inbox/settings/bitrix24/", bitrix24_settings, name="settings_bitrix24"),
    path("inbox/progress/<int:job_id>/", progress_views.job_progress, name="job_progress"),
    path("inbox/settings/team/", team_page.team_page, name="settings_team"),
    path(
        "inbox/settings/team/auto-assign/", team_page.auto_assign, name="settings_team_auto_assign"
    ),
    path(
        "inbox/settings/team/<int:membership_id>/",
        team_page.member_update,
        name="settings_team_member",
    ),
    path(
        "inbox/settings/team/<int:membership_id>/remove/",
        team_page.member_remove,
        name="settings_team_remove",
    ),
    path("inbox/settings/notifications/", notification_settings, name="settings_notifications"),
    path("inbox/settings/replay/", replay_pages.replay_start, name="settings_replay"),
    path(
        "inbox/settings/replay/<int:run_id>/", replay_pages.replay_run, name="settings_replay_run"
    ),
    path(
        "inbox/settings/replay/<int:run_id>/apply/",
        replay_pages.replay_apply,
        name="settings_replay_apply",
    ),
    path(
        "inbox/settings/replay/<int:run_id>/discard/",
        replay_pages.replay_discard,
        name="settings_replay_discard",
    ),
    path("api/v1/", api.urls),
    path("", include("integrations.bitrix24.urls")),
    path("", views.home, name="home"),
]
