from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0009_conversation_revision'),
        ('providers', '0002_job_moved_to_jobs_app'),
        ('review', '0004_job_moved_to_jobs_app'),
    ]

    # Job now lives in the jobs app (jobs/migrations/0001): its table and rows stay.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name='job', name='created_by'),
                migrations.RemoveField(model_name='job', name='project'),
                migrations.DeleteModel(name='Job'),
            ],
            database_operations=[],
        ),
    ]
